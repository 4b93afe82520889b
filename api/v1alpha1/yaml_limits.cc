#include "api/v1alpha1/yaml_limits.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tj::v1alpha1 {
namespace {

// What a node costs once its aliases are expanded.
struct Weight {
  size_t nodes = 0;
  size_t bytes = 0;
};

// Thrown from the event handler to stop the parse at the first limit crossed.
struct LimitCrossed {
  YAML::Mark mark;
  std::string message;
};

class BudgetHandler : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {
    // Anchor ids are per document.
    anchors_.clear();
    names_.clear();
  }
  void OnDocumentEnd() override {}

  void OnAnchor(const YAML::Mark&, const std::string& name) override { pending_name_ = name; }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Leaf(mark, anchor, Weight{1, 0});
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    Leaf(mark, anchor, Weight{1, value.size()});
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const std::string name = NameOf(anchor);
    for (const Open& open : stack_) {
      if (open.anchor == anchor) {
        throw LimitCrossed{mark, absl::StrCat("alias *", name,
                                              " refers to a node that contains it (a recursive "
                                              "alias)")};
      }
    }
    if (++aliases_ > kMaxYamlAliases) {
      throw LimitCrossed{mark, absl::StrCat("more than ", kMaxYamlAliases, " aliases")};
    }
    auto it = anchors_.find(anchor);
    // An unknown anchor is a syntax error the parser reports itself.
    const Weight weight = it == anchors_.end() ? Weight{1, 0} : it->second;
    Add(mark, weight, absl::StrCat("alias *", name, ": "));
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Start(mark, anchor);
  }
  void OnSequenceEnd() override { End(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Start(mark, anchor);
  }
  void OnMapEnd() override { End(); }

 private:
  struct Open {
    YAML::anchor_t anchor = 0;
    Weight weight;
  };

  std::string NameOf(YAML::anchor_t anchor) const {
    auto it = names_.find(anchor);
    return it == names_.end() ? std::to_string(anchor) : it->second;
  }

  void Named(YAML::anchor_t anchor) {
    if (anchor != 0) names_[anchor] = pending_name_;
    pending_name_.clear();
  }

  // Adds `weight` to the document and to every open node that contains it.
  void Add(const YAML::Mark& mark, Weight weight, const std::string& what) {
    total_.nodes += weight.nodes;
    total_.bytes += weight.bytes;
    if (total_.nodes > kMaxYamlNodes) {
      throw LimitCrossed{mark, what.empty() ? absl::StrCat("more than ", kMaxYamlNodes, " nodes")
                                            : absl::StrCat(what, "alias expansion exceeds ",
                                                           kMaxYamlNodes, " nodes")};
    }
    if (total_.bytes > kMaxYamlExpandedBytes) {
      throw LimitCrossed{mark,
                         absl::StrCat(what, what.empty() ? "" : "alias expansion ", "exceeds ",
                                      kMaxYamlExpandedBytes >> 20, " MiB of scalars")};
    }
    if (!stack_.empty()) {
      // Each open node's weight is at most the total, which is bounded above: no overflow.
      stack_.back().weight.nodes += weight.nodes;
      stack_.back().weight.bytes += weight.bytes;
    }
  }

  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, Weight weight) {
    Named(anchor);
    Add(mark, weight, "");
    if (anchor != 0) anchors_[anchor] = weight;
  }

  void Start(const YAML::Mark& mark, YAML::anchor_t anchor) {
    Named(anchor);
    if (static_cast<int>(stack_.size()) >= kMaxYamlDepth) {
      throw LimitCrossed{mark, absl::StrCat("nested deeper than ", kMaxYamlDepth, " levels")};
    }
    Add(mark, Weight{1, 0}, "");
    stack_.push_back(Open{anchor, Weight{1, 0}});
  }

  void End() {
    if (stack_.empty()) return;
    const Open closed = stack_.back();
    stack_.pop_back();
    if (closed.anchor != 0) anchors_[closed.anchor] = closed.weight;
    // The parent counted this node's own weight as it arrived; add what its children weighed.
    if (!stack_.empty()) {
      stack_.back().weight.nodes += closed.weight.nodes - 1;
      stack_.back().weight.bytes += closed.weight.bytes;
    }
  }

  std::vector<Open> stack_;
  std::map<YAML::anchor_t, Weight> anchors_;
  std::map<YAML::anchor_t, std::string> names_;
  std::string pending_name_;
  Weight total_;
  size_t aliases_ = 0;
};

int Line(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }
int Column(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.column + 1; }

}  // namespace

std::optional<FieldError> CheckYamlLimits(std::string_view text) {
  if (text.size() > kMaxManifestBytes) {
    return TextError(0, 0,
                     absl::StrCat(text.size(), " bytes is larger than ", kMaxManifestBytes >> 20,
                                  " MiB: not a TrainingJob manifest"));
  }
  std::istringstream in{std::string(text)};
  BudgetHandler handler;
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(handler)) {
    }
  } catch (const LimitCrossed& crossed) {
    return TextError(Line(crossed.mark), Column(crossed.mark), crossed.message);
  } catch (const YAML::Exception&) {
    return std::nullopt;  // the parser proper reports it, with its position
  }
  return std::nullopt;
}

}  // namespace tj::v1alpha1
