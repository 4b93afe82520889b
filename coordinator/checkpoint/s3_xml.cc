#include "coordinator/checkpoint/s3_xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tj {
namespace {

struct DocDeleter {
  void operator()(xmlDoc* doc) const { xmlFreeDoc(doc); }
};
using DocPtr = std::unique_ptr<xmlDoc, DocDeleter>;

DocPtr Parse(std::string_view body) {
  if (body.empty()) return nullptr;
  return DocPtr(xmlReadMemory(body.data(), static_cast<int>(body.size()), "s3.xml", nullptr,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
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
