#include "coordinator/checkpoint/s3_xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"

namespace tj {
namespace {

struct DocDeleter {
  void operator()(xmlDoc* doc) const { xmlFreeDoc(doc); }
};
using DocPtr = std::unique_ptr<xmlDoc, DocDeleter>;

struct ParserDeleter {
  void operator()(xmlParserCtxt* ctxt) const { xmlFreeParserCtxt(ctxt); }
};

// S3 never sends a DOCTYPE, and a DTD is where entity bombs (billion laughs) and external entities
// live: the parse stops at the declaration, before any entity is defined, and the body is refused.
void RefuseDoctype(void* ctx, const xmlChar* /*name*/, const xmlChar* /*external_id*/,
                   const xmlChar* /*system_id*/) {
  xmlStopParser(static_cast<xmlParserCtxt*>(ctx));
}

// nullptr for a body that is empty, over kMaxS3XmlBytes, malformed or declares a DTD. No network
// (XML_PARSE_NONET), no entity substitution or DTD loading (neither XML_PARSE_NOENT nor
// XML_PARSE_DTDLOAD), and libxml2's own limits on depth (256) and text nodes (no XML_PARSE_HUGE).
DocPtr Parse(std::string_view body) {
  if (body.empty() || body.size() > kMaxS3XmlBytes) return nullptr;
  // libxml2 2.9 wants its global state initialised once before threads parse concurrently.
  static const bool initialized = (xmlInitParser(), true);
  (void)initialized;
  const std::unique_ptr<xmlParserCtxt, ParserDeleter> ctxt(xmlNewParserCtxt());
  if (ctxt == nullptr || ctxt->sax == nullptr) return nullptr;
  ctxt->sax->internalSubset = RefuseDoctype;
  ctxt->sax->externalSubset = RefuseDoctype;
  DocPtr doc(xmlCtxtReadMemory(ctxt.get(), body.data(), static_cast<int>(body.size()), "s3.xml",
                               nullptr, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
  if (doc != nullptr && (doc->intSubset != nullptr || doc->extSubset != nullptr)) return nullptr;
  return doc;
}

bool Named(const xmlNode* node, std::string_view name) {
  return node->type == XML_ELEMENT_NODE &&
         std::string_view(reinterpret_cast<const char*>(node->name)) == name;
}

std::string Text(const xmlNode* node) {
  xmlChar* content = xmlNodeGetContent(node);
  if (content == nullptr) return {};
  std::string text(reinterpret_cast<const char*>(content));
  xmlFree(content);
  return text;
}

// The text of `parent`'s first child element called `name`; nullopt without one.
std::optional<std::string> ChildText(const xmlNode* parent, std::string_view name) {
  for (const xmlNode* child = parent->children; child != nullptr; child = child->next) {
    if (Named(child, name)) return Text(child);
  }
  return std::nullopt;
}

// InvalidArgument for a body too large to parse, naming the document expected.
absl::Status CheckSize(std::string_view body, const char* expected) {
  if (body.size() <= kMaxS3XmlBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("a response of ", body.size(), " bytes is over the ", kMaxS3XmlBytes >> 20,
                   " MiB an S3 XML response may have (expected ", expected, ")"));
}

const xmlNode* RootNamed(const DocPtr& doc, std::string_view name) {
  if (doc == nullptr) return nullptr;
  const xmlNode* root = xmlDocGetRootElement(doc.get());
  return root != nullptr && Named(root, name) ? root : nullptr;
}

}  // namespace

std::optional<S3ErrorBody> ParseS3Error(std::string_view body) {
  const DocPtr doc = Parse(body);
  const xmlNode* root = RootNamed(doc, "Error");
  if (root == nullptr) return std::nullopt;
  return S3ErrorBody{ChildText(root, "Code").value_or(""), ChildText(root, "Message").value_or("")};
}

absl::StatusOr<std::string> ParseInitiateMultipartUpload(std::string_view body) {
  TJ_RETURN_IF_ERROR(CheckSize(body, "an InitiateMultipartUploadResult"));
  const DocPtr doc = Parse(body);
  const xmlNode* root = RootNamed(doc, "InitiateMultipartUploadResult");
  std::optional<std::string> id;
  if (root != nullptr) id = ChildText(root, "UploadId");
  if (!id.has_value() || id->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an InitiateMultipartUploadResult with an UploadId: ",
                     std::string(body.substr(0, 200))));
  }
  return *id;
}

absl::StatusOr<S3ListPage> ParseListObjectsV2(std::string_view body) {
  TJ_RETURN_IF_ERROR(CheckSize(body, "a ListBucketResult"));
  const DocPtr doc = Parse(body);
  const xmlNode* root = RootNamed(doc, "ListBucketResult");
  if (root == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a ListBucketResult: ", std::string(body.substr(0, 200))));
  }
  S3ListPage page;
  page.truncated = ChildText(root, "IsTruncated").value_or("false") == "true";
  page.next_continuation_token = ChildText(root, "NextContinuationToken").value_or("");
  for (const xmlNode* child = root->children; child != nullptr; child = child->next) {
    if (!Named(child, "Contents")) continue;
    ObjectInfo info;
    info.key = ChildText(child, "Key").value_or("");
    if (info.key.empty() || !absl::SimpleAtoi(ChildText(child, "Size").value_or(""), &info.size)) {
      return absl::InvalidArgumentError("ListBucketResult: a Contents entry without Key or Size");
    }
    page.objects.push_back(std::move(info));
  }
  if (page.truncated && page.next_continuation_token.empty()) {
    return absl::InvalidArgumentError("ListBucketResult: truncated without NextContinuationToken");
  }
  return page;
}

}  // namespace tj
