// A parameter server's /metrics as Prometheus scrapes it: a real PsServer served through the real
// endpoint, driven by a real PsClient (dense pull and push, embedding lookups and pushes), checked
// by `promtool check metrics` and against the calls made; and the tj-ps binary serving it only
// when TJ_METRICS_ADDRESS is set for it.
#include "coordinator/ps/ps_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "coordinator/base/values.h"
#include "coordinator/metrics/metrics_http_server.h"
#include "coordinator/ps/ps_client.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tests/support/http_get.h"
#include "tests/support/promtool.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"
#include "tjctl/local/process.h"

namespace tj {
namespace {

using testing::FloatVariable;
using ::testing::HasSubstr;
using testing::HttpBody;
using ::testing::Not;
using testing::Promtool;

void ExpectPromtoolAccepts(const std::string& text) {
  auto [code, output] = Promtool(text);
  if (code == 127) GTEST_SKIP() << "promtool absent: apt-get install prometheus";
  EXPECT_EQ(code, 0) << output << "\n" << text;
}

// The value of the series `series` (name with its labels, as rendered); -1 when absent.
double Value(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(PsMetricsTest, TheEndpointShowsWhatThePsServedAndHolds) {
  auto ps = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(ps.ok()) << ps.status();
  MetricsRegistry registry;
  CollectPsMetrics(**ps, registry);
  auto server = MetricsHttpServer::Start("127.0.0.1:0", &registry);
  ASSERT_TRUE(server.ok()) << server.status();
  auto scrape = [&] { return HttpBody(testing::HttpGet((*server)->port(), "/metrics")); };

  // Before anything is served: every figure is 0, none negative or NaN.
  const std::string empty = scrape();
  ExpectPromtoolAccepts(empty);
  EXPECT_EQ(Value(empty, "tj_ps_pulled_bytes_total{kind=\"dense\"}"), 0);
  EXPECT_EQ(Value(empty, "tj_ps_rows"), 0);
  EXPECT_EQ(Value(empty, "tj_ps_pushes_held_back_total"), 0);
  EXPECT_THAT(empty, Not(HasSubstr("NaN")));
  EXPECT_THAT(empty, Not(HasSubstr(" -")));

  auto client = PsClient::Connect((*ps)->address(), 0);
  ASSERT_TRUE(client->CreateVariables({FloatVariable("w", {1, 2, 3, 4}, {4})}).ok());
  ASSERT_TRUE(client->Create(testing::CreateTablesRequest({testing::Table("emb", 8)})).ok());
  ASSERT_TRUE(client->Push({"w"}, {FloatTensor(std::vector<float>{1, 1, 1, 1}, {4})}).ok());
  ASSERT_TRUE(client->Pull({"w"}).ok());
  ASSERT_TRUE(client->Pull({"w"}).ok());
  ASSERT_TRUE(client->Lookup(testing::LookupRequest({{"emb", {1, 2, 3}}})).ok());
  ASSERT_TRUE(client->Lookup(testing::LookupRequest({{"emb", {3, 4}}})).ok());
  ASSERT_TRUE(
      client->PushSparse(testing::SparsePush("emb", {1, 4}, std::vector<float>(16, 0.5f))).ok());

  const std::string text = scrape();
  ExpectPromtoolAccepts(text);
  EXPECT_EQ(Value(text, "tj_ps_rows_looked_up_total"), 5);
  EXPECT_EQ(Value(text, "tj_ps_rows_pushed_total"), 2);
  EXPECT_EQ(Value(text, "tj_ps_rows"), 4) << "ids 1 to 4";
  // Two pulls of 4 floats: at least their 32 bytes of values went out.
  EXPECT_GE(Value(text, "tj_ps_pulled_bytes_total{kind=\"dense\"}"), 32);
  EXPECT_GE(Value(text, "tj_ps_pushed_bytes_total{kind=\"dense\"}"), 16);
  EXPECT_GE(Value(text, "tj_ps_pulled_bytes_total{kind=\"embedding\"}"), 5 * 8 * 4);
  EXPECT_GE(Value(text, "tj_ps_pushed_bytes_total{kind=\"embedding\"}"), 16 * 4);
  EXPECT_EQ(Value(text, "tj_ps_memory_bytes{kind=\"dense\"}"), (*ps)->store().dense_bytes());
  EXPECT_GE(Value(text, "tj_ps_memory_bytes{kind=\"tables\"}"), 4 * 8 * 4);
  EXPECT_GT(Value(text, "tj_ps_resident_memory_bytes"), 0);
  EXPECT_GT(Value(text, "tj_ps_memory_limit_bytes"), 0);
  EXPECT_THAT(text, Not(HasSubstr("NaN")));
  registry.RemoveCollectors();
}

// The tj-ps binary opens the endpoint only when TJ_METRICS_ADDRESS is set for it.
TEST(PsMetricsTest, TheTjPsBinaryServesMetricsWhenTjMetricsAddressIsSet) {
  testing::TempDir dir;
  const int port = local::PickFreePort();
  local::ProcessSpec spec;
  spec.binary = TJ_PS_BINARY;
  spec.args = {"--task", "0", "--address", "127.0.0.1:0"};
  spec.env["TJ_METRICS_ADDRESS"] = "127.0.0.1:" + std::to_string(port);
  spec.log_path = dir.Join("ps.log");
  auto process = local::ChildProcess::Start(spec);
  ASSERT_TRUE(process.ok()) << process.status();
  std::string text;
  ASSERT_TRUE(testing::WaitFor([&] {
    text = HttpBody(testing::HttpGet(port, "/metrics"));
    return !text.empty();
  })) << "no /metrics on port "
      << port;
  ExpectPromtoolAccepts(text);
  EXPECT_THAT(text, HasSubstr("tj_ps_memory_bytes{kind=\"dense\"} 0"));
}

}  // namespace
}  // namespace tj
