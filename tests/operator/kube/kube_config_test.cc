// Unit tests of kubeconfig loading (merge order, data vs files, bad input) and in-cluster config.
#include "operator/kube/kube_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tj::kube {
namespace {

using ::testing::HasSubstr;

class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kubeconfig-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  std::filesystem::path dir_;
};

constexpr char kMain[] = R"(apiVersion: v1
kind: Config
current-context: main
clusters:
- name: c1
  cluster:
    server: https://10.1.1.1:6443/
    certificate-authority: ca.pem
users:
- name: u1
  user:
    client-certificate: sub/cert.pem
    client-key-data: S0VZ
contexts:
- name: main
  context: {cluster: c1, user: u1, namespace: team-a}
- name: tokenctx
  context: {cluster: c1, user: u2}
)";

constexpr char kSecond[] = R"(current-context: other
clusters:
- name: c1
  cluster: {server: https://should-not-win:1}
- name: c2
  cluster: {server: https://10.2.2.2, insecure-skip-tls-verify: true}
users:
- name: u2
  user: {tokenFile: token.txt}
contexts:
- name: main
  context: {cluster: c2}
- name: other
  context: {cluster: c2, user: u2}
)";

TEST_F(KubeConfigTest, FirstFileWinsAndFilesAreRelativeToTheirKubeconfig) {
  Write("ca.pem", "CA-PEM");
  std::filesystem::create_directories(dir_ / "sub");
  Write("sub/cert.pem", "CERT-PEM");
  Write("token.txt", "tok-123\n");
  const std::string a = Write("a.yaml", kMain);
  const std::string b = Write("b.yaml", kSecond);
  auto cfg = LoadKubeConfigFiles({a, b});
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->context, "main");
  EXPECT_EQ(cfg->server, "https://10.1.1.1:6443");
  EXPECT_EQ(cfg->ca_pem, "CA-PEM");
  EXPECT_EQ(cfg->client_cert_pem, "CERT-PEM");
  EXPECT_EQ(cfg->client_key_pem, "KEY");
  EXPECT_EQ(cfg->namespace_name, "team-a");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);

  // A context of the first file using a user of the second.
  auto tok = LoadKubeConfigFiles({a, b}, "tokenctx");
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ(tok->token, "tok-123");
  EXPECT_EQ(tok->token_file, (dir_ / "token.txt").string());

  // The other order: b's current-context and clusters win.
  auto rev = LoadKubeConfigFiles({b, a});
  ASSERT_TRUE(rev.ok()) << rev.status();
  EXPECT_EQ(rev->context, "other");
  EXPECT_EQ(rev->server, "https://10.2.2.2");
  EXPECT_TRUE(rev->insecure_skip_tls_verify);
}

TEST_F(KubeConfigTest, KubeconfigEnvironmentSkipsMissingFiles) {
  Write("ca.pem", "CA");
  std::filesystem::create_directories(dir_ / "sub");
  Write("sub/cert.pem", "C");
  const std::string a = Write("a.yaml", kMain);
  const std::string env = (dir_ / "missing.yaml").string() + ":" + a;
  ::setenv("KUBECONFIG", env.c_str(), 1);
  auto cfg = LoadKubeConfigFromEnvironment();
  ::unsetenv("KUBECONFIG");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://10.1.1.1:6443");
}

TEST_F(KubeConfigTest, MissingContextNamesFileAndContext) {
  const std::string a = Write("a.yaml", kMain);
  auto cfg = LoadKubeConfigFiles({a}, "nope");
  EXPECT_EQ(cfg.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(cfg.status().message()), HasSubstr(a));
  EXPECT_THAT(std::string(cfg.status().message()), HasSubstr("context \"nope\""));
}

TEST_F(KubeConfigTest, UnreadableCertificateNamesFileFieldAndPath) {
  Write("ca.pem", "CA");
  const std::string a = Write("a.yaml", kMain);  // sub/cert.pem does not exist
  auto cfg = LoadKubeConfigFiles({a});
  ASSERT_FALSE(cfg.ok());
  const std::string msg(cfg.status().message());
  EXPECT_THAT(msg, HasSubstr(a));
  EXPECT_THAT(msg, HasSubstr("users[u1].client-certificate"));
  EXPECT_THAT(msg, HasSubstr((dir_ / "sub/cert.pem").string()));
}

TEST_F(KubeConfigTest, BadInputIsAnErrorNotACrash) {
  EXPECT_FALSE(LoadKubeConfigFiles({(dir_ / "absent").string()}).ok());
  EXPECT_FALSE(LoadKubeConfigFiles({Write("bad.yaml", "clusters: [ {")}).ok());
  EXPECT_FALSE(LoadKubeConfigFiles({Write("list.yaml", "- a\n- b\n")}).ok());
  auto no_current = LoadKubeConfigFiles({Write("empty.yaml", "kind: Config\n")});
  EXPECT_THAT(std::string(no_current.status().message()), HasSubstr("current-context"));
  auto bad_b64 = LoadKubeConfigFiles({Write("b64.yaml", R"(current-context: x
contexts: [{name: x, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: "https://s", certificate-authority-data: "%%%"}}]
)")});
  EXPECT_THAT(std::string(bad_b64.status().message()),
              HasSubstr("clusters[c].certificate-authority-data is not valid base64"));
  auto exec = LoadKubeConfigFiles({Write("exec.yaml", R"(current-context: x
contexts: [{name: x, context: {cluster: c, user: e}}]
clusters: [{name: c, cluster: {server: "https://s"}}]
users: [{name: e, user: {exec: {command: aws}}}]
)")});
  // No apiVersion: the exec entry is rejected at load time, naming the field.
  EXPECT_EQ(exec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(exec.status().message()), HasSubstr("users[e].exec.apiVersion"));
}

// Found while writing kubeconfig_fuzzer: yaml-cpp threw (BadSubscript) out of the loader for
// entries that are scalars where maps are expected, which ended the process.
TEST_F(KubeConfigTest, EntriesOfTheWrongShapeAreAnErrorNotAnException) {
  for (const char* text : {"clusters: [abc]\n", "users: [1]\ncurrent-context: x\n",
                           "current-context: x\ncontexts: [{name: x, context: c}]\n"
                           "clusters: [{name: c, cluster: {server: https://s}}]\n",
                           "current-context: [a]\n", "clusters: &a [*a]\n"}) {
    SCOPED_TRACE(text);
    const std::string path = Write("shape.yaml", text);
    absl::StatusOr<KubeConfig> config = LoadKubeConfigFiles({path});
    ASSERT_FALSE(config.ok());
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(path));
  }
}

TEST_F(KubeConfigTest, AFileThatNeverEndsIsRefusedNotReadIntoMemory) {
  auto config = LoadKubeConfigFiles({Write("zero.yaml", R"(current-context: x
contexts: [{name: x, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: "https://s", certificate-authority: /dev/zero}}]
)")});
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(
      std::string(config.status().message()),
      HasSubstr("clusters[c].certificate-authority: file \"/dev/zero\" is larger than 16 MiB"));
}

TEST_F(KubeConfigTest, InClusterConfig) {
  InClusterPaths paths;
  paths.token = Write("token", "sa-token\n");
  paths.ca = Write("ca.crt", "SA-CA");
  paths.namespace_file = Write("namespace", "jobs");
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(LoadInClusterConfig(paths).status().code(), absl::StatusCode::kFailedPrecondition);
  ::setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto cfg = LoadInClusterConfig(paths);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://10.0.0.1:443");
  EXPECT_EQ(cfg->token, "sa-token");
  EXPECT_EQ(cfg->token_file, paths.token);
  EXPECT_EQ(cfg->ca_pem, "SA-CA");
  EXPECT_EQ(cfg->namespace_name, "jobs");
  ::setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  EXPECT_EQ(LoadInClusterConfig(paths)->server, "https://[fd00::1]:443");
  paths.token = (dir_ / "no-token").string();
  auto missing = LoadInClusterConfig(paths);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("no-token"));
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
}

}  // namespace
}  // namespace tj::kube
