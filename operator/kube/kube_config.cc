#include "operator/kube/kube_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "coordinator/base/status_macros.h"
#include "yaml-cpp/yaml.h"

namespace tj::kube {
namespace {

// Kubeconfigs, certificates and tokens are kilobytes; a path naming /dev/zero or a huge file must
// not fill memory.
constexpr size_t kMaxFileBytes = size_t{16} << 20;

absl::StatusOr<std::string> ReadFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(what, ": cannot read file \"", path, "\""));
  }
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": file \"", path, "\" is larger than ", kMaxFileBytes >> 20, " MiB"));
    }
  }
  return text;
}

// One named entry (cluster, user or context) and the file it came from.
struct Entry {
  YAML::Node node;
  std::string file;
};

std::string Str(const YAML::Node& node, const char* key) {
  const YAML::Node v = node[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

std::string Resolve(const std::string& file, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(file).parent_path() / path).string();
}

// Reads `<key>-data` (base64) or `<key>` (a path relative to the kubeconfig file).
absl::StatusOr<std::string> DataOrFile(const Entry& entry, const std::string& where,
                                       const std::string& key) {
  const std::string data = Str(entry.node, (key + "-data").c_str());
  if (!data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(
          absl::StrCat(entry.file, ": ", where, ".", key, "-data is not valid base64"));
    }
    return decoded;
  }
  const std::string path = Str(entry.node, key.c_str());
  if (path.empty()) return std::string();
  return ReadFile(Resolve(entry.file, path), absl::StrCat(entry.file, ": ", where, ".", key));
}

void MergeNamed(const YAML::Node& root, const char* list, const char* inner,
                const std::string& file, std::map<std::string, Entry>& out) {
  const YAML::Node items = root[list];
  if (!items || !items.IsSequence()) return;
  for (const YAML::Node& item : items) {
    const std::string name = Str(item, "name");
    if (name.empty() || out.count(name)) continue;  // first file wins
    const YAML::Node body = item[inner];
    out[name] = Entry{body ? body : YAML::Node(YAML::NodeType::Map), file};
  }
}

// users[].exec -> ExecConfig, every field checked here so a bad plugin entry fails at load time.
absl::StatusOr<ExecConfig> ParseExec(const YAML::Node& exec, const std::string& file,
                                     const std::string& uwhere) {
  ExecConfig out;
  out.where = absl::StrCat(file, ": ", uwhere, ".exec");
  out.base_dir = std::filesystem::path(file).parent_path().string();
  if (!exec.IsMap()) return absl::InvalidArgumentError(absl::StrCat(out.where, " is not a map"));
  out.command = Str(exec, "command");
  out.api_version = Str(exec, "apiVersion");
  out.install_hint = Str(exec, "installHint");
  out.interactive_mode = Str(exec, "interactiveMode");
  const std::string provide = Str(exec, "provideClusterInfo");
  if (!provide.empty() && provide != "true" && provide != "false") {
    return absl::InvalidArgumentError(
        absl::StrCat(out.where, ".provideClusterInfo \"", provide, "\" is not true or false"));
  }
  out.provide_cluster_info = provide == "true";
  if (const YAML::Node args = exec["args"]; args && !args.IsNull()) {
    if (!args.IsSequence()) {
      return absl::InvalidArgumentError(absl::StrCat(out.where, ".args is not a list"));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].IsScalar()) {
        return absl::InvalidArgumentError(
            absl::StrCat(out.where, ".args[", i, "] is not a string"));
      }
      out.args.push_back(args[i].as<std::string>());
    }
  }
  if (const YAML::Node env = exec["env"]; env && !env.IsNull()) {
    if (!env.IsSequence()) {
      return absl::InvalidArgumentError(absl::StrCat(out.where, ".env is not a list"));
    }
    for (size_t i = 0; i < env.size(); ++i) {
      const std::string name = env[i].IsMap() ? Str(env[i], "name") : "";
      if (name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(out.where, ".env[", i, "].name is missing"));
      }
      out.env.emplace_back(name, Str(env[i], "value"));
    }
  }
  TJ_RETURN_IF_ERROR(ValidateExecConfig(out));
  return out;
}

absl::StatusOr<KubeConfig> LoadKubeConfigFilesOrThrow(const std::vector<std::string>& paths,
                                                      const std::string& context);

}  // namespace

absl::StatusOr<KubeConfig> LoadKubeConfigFiles(const std::vector<std::string>& paths,
                                               const std::string& context) {
  // yaml-cpp throws when a node is read as what it is not (a scalar where a map is expected:
  // "clusters: [abc]"); every such shape is a bad kubeconfig, not a crash.
  try {
    return LoadKubeConfigFilesOrThrow(paths, context);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::StrJoin(paths, ":"), ": not a valid kubeconfig: ", e.what()));
  }
}

namespace {

absl::StatusOr<KubeConfig> LoadKubeConfigFilesOrThrow(const std::vector<std::string>& paths,
                                                      const std::string& context) {
  if (paths.empty()) return absl::InvalidArgumentError("no kubeconfig file given");
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context, current_from;
  for (const std::string& path : paths) {
    TJ_ASSIGN_OR_RETURN(std::string text, ReadFile(path, "kubeconfig"));
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not a valid kubeconfig: ", std::string(e.what())));
    }
    if (!root || root.IsNull()) continue;
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": not a valid kubeconfig (not a map)"));
    }
    MergeNamed(root, "clusters", "cluster", path, clusters);
    MergeNamed(root, "users", "user", path, users);
    MergeNamed(root, "contexts", "context", path, contexts);
    if (current_context.empty()) {
      current_context = Str(root, "current-context");
      current_from = path;
    }
  }
  const std::string sources = absl::StrJoin(paths, ":");
  const std::string ctx_name = context.empty() ? current_context : context;
  if (ctx_name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(sources, ": current-context is not set"));
  }
  auto ctx = contexts.find(ctx_name);
  if (ctx == contexts.end()) {
    return absl::NotFoundError(
        absl::StrCat(sources, ": context \"", ctx_name, "\" (current-context) is not in contexts"));
  }
  const std::string cluster_name = Str(ctx->second.node, "cluster");
  const std::string user_name = Str(ctx->second.node, "user");
  auto cluster = clusters.find(cluster_name);
  if (cluster == clusters.end()) {
    return absl::NotFoundError(absl::StrCat(ctx->second.file, ": contexts[", ctx_name,
                                            "].cluster \"", cluster_name, "\" is not in clusters"));
  }

  KubeConfig cfg;
  cfg.context = ctx_name;
  cfg.source = sources;
  const std::string ns = Str(ctx->second.node, "namespace");
  if (!ns.empty()) cfg.namespace_name = ns;

  const std::string cwhere = absl::StrCat("clusters[", cluster_name, "]");
  cfg.server = Str(cluster->second.node, "server");
  if (cfg.server.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(cluster->second.file, ": ", cwhere, ".server is missing"));
  }
  while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
  const std::string insecure = Str(cluster->second.node, "insecure-skip-tls-verify");
  cfg.insecure_skip_tls_verify = insecure == "true";
  TJ_ASSIGN_OR_RETURN(cfg.ca_pem, DataOrFile(cluster->second, cwhere, "certificate-authority"));

  if (!user_name.empty()) {
    auto user = users.find(user_name);
    if (user == users.end()) {
      return absl::NotFoundError(absl::StrCat(ctx->second.file, ": contexts[", ctx_name,
                                              "].user \"", user_name, "\" is not in users"));
    }
    const std::string uwhere = absl::StrCat("users[", user_name, "]");
    cfg.user = user_name;
    if (const YAML::Node exec = user->second.node["exec"]; exec && !exec.IsNull()) {
      TJ_ASSIGN_OR_RETURN(cfg.exec, ParseExec(exec, user->second.file, uwhere));
      cfg.exec->cluster_server = cfg.server;
      cfg.exec->cluster_ca_pem = cfg.ca_pem;
      cfg.exec->cluster_insecure_skip_tls_verify = cfg.insecure_skip_tls_verify;
    }
    TJ_ASSIGN_OR_RETURN(cfg.client_cert_pem,
                        DataOrFile(user->second, uwhere, "client-certificate"));
    TJ_ASSIGN_OR_RETURN(cfg.client_key_pem, DataOrFile(user->second, uwhere, "client-key"));
    if (cfg.client_cert_pem.empty() != cfg.client_key_pem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(user->second.file, ": ", uwhere,
                       " has a client certificate without a client key, or the other way round"));
    }
    cfg.token = Str(user->second.node, "token");
    const std::string token_file = Str(user->second.node, "tokenFile");
    if (cfg.token.empty() && !token_file.empty()) {
      cfg.token_file = Resolve(user->second.file, token_file);
      TJ_ASSIGN_OR_RETURN(cfg.token, ReadFile(cfg.token_file, absl::StrCat(user->second.file, ": ",
                                                                           uwhere, ".tokenFile")));
      while (!cfg.token.empty() && (cfg.token.back() == '\n' || cfg.token.back() == '\r')) {
        cfg.token.pop_back();
      }
    }
  }
  return cfg;
}

}  // namespace

absl::StatusOr<KubeConfig> LoadKubeConfigFromEnvironment(const std::string& context) {
  std::vector<std::string> paths;
  const char* env = std::getenv("KUBECONFIG");
  if (env != nullptr && *env != '\0') {
    for (absl::string_view p : absl::StrSplit(env, ':', absl::SkipEmpty())) {
      std::string path(p);
      if (std::filesystem::exists(path)) paths.push_back(path);  // kubectl skips missing files
    }
    if (paths.empty()) {
      return absl::NotFoundError(absl::StrCat("KUBECONFIG=", env, ": none of these files exists"));
    }
  } else {
    const char* home = std::getenv("HOME");
    paths.push_back(absl::StrCat(home ? home : "", "/.kube/config"));
  }
  return LoadKubeConfigFiles(paths, context);
}

absl::StatusOr<KubeConfig> LoadInClusterConfig(const InClusterPaths& paths) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
        "set");
  }
  KubeConfig cfg;
  const std::string h(host);
  // An IPv6 address must be bracketed in a URL.
  cfg.server = h.find(':') != std::string::npos ? absl::StrCat("https://[", h, "]:", port)
                                                : absl::StrCat("https://", h, ":", port);
  TJ_ASSIGN_OR_RETURN(cfg.token, ReadFile(paths.token, "in-cluster service-account token"));
  while (!cfg.token.empty() && (cfg.token.back() == '\n' || cfg.token.back() == '\r')) {
    cfg.token.pop_back();
  }
  cfg.token_file = paths.token;
  TJ_ASSIGN_OR_RETURN(cfg.ca_pem, ReadFile(paths.ca, "in-cluster service-account CA"));
  auto ns = ReadFile(paths.namespace_file, "in-cluster namespace");
  if (ns.ok() && !ns->empty()) {
    cfg.namespace_name = *ns;
    while (!cfg.namespace_name.empty() && cfg.namespace_name.back() == '\n') {
      cfg.namespace_name.pop_back();
    }
  }
  cfg.context = "in-cluster";
  cfg.source = paths.token;
  return cfg;
}

}  // namespace tj::kube
