// A scripted HttpTransport for unit tests: answers requests from a queue of canned responses
// (or stream chunks) and records every request it saw.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "operator/kube/http_transport.h"

namespace tj::kube::testing {

struct ScriptedResponse {
  absl::Status error;                          // non-OK: the transport call itself fails
  HttpResponse response;                       // status, headers, body
  std::vector<std::string> chunks;             // for Stream on 2xx: delivered one by one
  absl::Status stream_end = absl::OkStatus();  // returned after the chunks (e.g. Unavailable)
};

class FakeTransport : public HttpTransport {
 public:
  void Push(ScriptedResponse r) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.push_back(std::move(r));
  }
  void PushJson(int status, std::string body, std::map<std::string, std::string> headers = {}) {
    ScriptedResponse r;
    r.response.status = status;
    r.response.body = std::move(body);
    r.response.headers = std::move(headers);
    Push(std::move(r));
  }
  void PushStream(std::vector<std::string> chunks, absl::Status end = absl::OkStatus()) {
    ScriptedResponse r;
    r.response.status = 200;
    r.chunks = std::move(chunks);
    r.stream_end = std::move(end);
    Push(std::move(r));
  }

  std::vector<HttpRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    ScriptedResponse r = Next(request);
    if (!r.error.ok()) return r.error;
    return r.response;
  }

  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request, const StreamOptions& options,
                                      const ChunkCallback& on_chunk) override {
    ScriptedResponse r = Next(request);
    if (!r.error.ok()) return r.error;
    if (r.response.status < 200 || r.response.status >= 300) return r.response;
    for (const std::string& chunk : r.chunks) {
      if (!on_chunk(chunk)) return HttpResponse{r.response.status, r.response.headers, ""};
    }
    if (!r.stream_end.ok()) return r.stream_end;
    return HttpResponse{r.response.status, r.response.headers, ""};
  }

  std::string server() const override { return "https://fake:6443"; }

 private:
  ScriptedResponse Next(const HttpRequest& request) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (script_.empty()) {
      ScriptedResponse r;
      r.error = absl::InternalError("FakeTransport: no scripted response left for " +
                                    request.method + " " + request.path);
      return r;
    }
    ScriptedResponse r = std::move(script_.front());
    script_.pop_front();
    return r;
  }

  std::mutex mu_;
  std::deque<ScriptedResponse> script_;
  std::vector<HttpRequest> requests_;
};

}  // namespace tj::kube::testing
