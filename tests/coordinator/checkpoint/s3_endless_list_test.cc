// S3ObjectStore::List against an endpoint that never ends its listing. SeaweedFS cannot be made to
// answer like that, so a loopback HTTP responder stands in for it (the one fake S3 endpoint in the
// tests): every GET gets the same page, truncated, with a continuation token chosen by the test.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "coordinator/checkpoint/s3_object_store.h"
#include "tests/support/loopback_listener.h"

namespace tj {
namespace {

using ::testing::HasSubstr;

class LoopbackResponder {
 public:
  // `page(n)`: the body of the n-th response (from 0).
  explicit LoopbackResponder(std::function<std::string(int)> page) : page_(std::move(page)) {
    thread_ = std::thread([this, fd = listener_.fd()] { Serve(fd); });
  }
  ~LoopbackResponder() {
    listener_.Close();
    thread_.join();
  }
  std::string url() const { return listener_.url(); }
  int served() const { return served_.load(); }

 private:
  void Serve(int fd) {
    for (int n = 0;; ++n) {
      const int client = ::accept(fd, nullptr, nullptr);
      if (client < 0) return;
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t got = ::read(client, buffer, sizeof(buffer));
        if (got <= 0) break;
        request.append(buffer, static_cast<size_t>(got));
      }
      const std::string body = page_(n);
      const std::string response =
          absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: ",
                       body.size(), "\r\nConnection: close\r\n\r\n", body);
      [[maybe_unused]] const ssize_t sent = ::write(client, response.data(), response.size());
      ::close(client);
      served_.fetch_add(1);
    }
  }

  std::function<std::string(int)> page_;
  testing::LoopbackListener listener_;
  std::atomic<int> served_{0};
  std::thread thread_;
};

std::string TruncatedPage(const std::string& token, const std::string& key) {
  return absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>"
      "<IsTruncated>true</IsTruncated>",
      token.empty() ? "" : absl::StrCat("<NextContinuationToken>", token, "</NextContinuationToken>"),
      "<Contents><Key>", key, "</Key><Size>1</Size></Contents></ListBucketResult>");
}

S3ObjectStore StoreAt(const std::string& url) {
  S3Options options;
  options.endpoint = url;
  options.access_key = "AKIDEXAMPLE0001";
  options.secret_key = "secret";
  return S3ObjectStore(std::move(options), "b");
}

TEST(S3EndlessListTest, TheSameContinuationTokenAgainIsAnErrorNotALoop) {
  LoopbackResponder endpoint([](int n) { return TruncatedPage("again", absl::StrCat("k", n)); });
  S3ObjectStore store = StoreAt(endpoint.url());
  const auto listed = store.List("ckpt/");
  ASSERT_FALSE(listed.ok());
  EXPECT_THAT(std::string(listed.status().message()),
              HasSubstr("the continuation token it was asked with"));
  EXPECT_EQ(endpoint.served(), 2) << "the first page, then the one that repeats its token";
}

TEST(S3EndlessListTest, ATruncatedPageWithoutATokenIsAnErrorNotAShortList) {
  LoopbackResponder endpoint([](int) { return TruncatedPage("", "k"); });
  S3ObjectStore store = StoreAt(endpoint.url());
  const auto listed = store.List("ckpt/");
  ASSERT_FALSE(listed.ok());
  EXPECT_THAT(std::string(listed.status().message()), HasSubstr("truncated without NextContinuationToken"));
}

TEST(S3EndlessListTest, PagesWithoutEndAreCutOffAtTheBound) {
  LoopbackResponder endpoint(
      [](int n) { return TruncatedPage(absl::StrCat("t", n), absl::StrCat("k", n)); });
  S3ObjectStore store = StoreAt(endpoint.url());
  const auto listed = store.List("ckpt/");
  ASSERT_TRUE(absl::IsResourceExhausted(listed.status())) << listed.status();
  EXPECT_EQ(endpoint.served(), kMaxListPages + 1);
}

}  // namespace
}  // namespace tj
