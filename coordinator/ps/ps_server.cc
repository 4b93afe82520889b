#include "coordinator/ps/ps_server.h"

#include "coordinator/base/job_tls.h"

#include <grpc/grpc.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/base/channel.h"
#include "coordinator/base/malloc_tuning.h"
#include "coordinator/ps/memory_budget.h"
#include "coordinator/ps/ps_channel.h"
#include "spdlog/spdlog.h"

namespace tj {
namespace {

// How long a shut-down server keeps connections open after its last handler returned.
constexpr absl::Duration kResponseFlush = absl::Milliseconds(100);

// "127.0.0.1:0" -> "127.0.0.1"; "[::1]:0" -> "[::1]". An address without a port is returned whole.
std::string HostOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || address.back() == ']') return address;
  return address.substr(0, colon);
}

}  // namespace

PsServer::PsServer(int ps_task, std::string address, PsServiceOptions options)
    : address_(std::move(address)), service_(ps_task, store_, options) {
  // Embedding rows grow on demand: bounded by what this process could allocate when it started,
  // less the headroom the coordinator's placement check keeps too, so a lookup beyond it is an
  // error naming the table instead of an OOM kill. A PS that starts with no more than the headroom
  // free gets a budget of 0, which refuses every new row (it used to mean no bound at all).
  // gRPC's threads would each get a malloc arena (8 per core by default), each keeping its own
  // request and response buffers: measured at 6M rows, 1.34 x the raw rows with the default, 1.29
  // with 2 arenas (tj-bench-embedding). Arenas beyond one a core only save lock contention that
  // threads beyond one a core cannot have.
  BoundMallocArenas();
  const MemoryBudget memory = ReadMemoryBudget();
  if (memory.available_bytes > 0) {
    const int64_t budget = std::max<int64_t>(0, memory.available_bytes - kPsMemoryHeadroomBytes);
    store_.SetMemoryBudget(budget, absl::StrCat(memory.source, ", less ",
                                                HumanBytes(kPsMemoryHeadroomBytes),
                                                " headroom, at start"));
  }
}

absl::StatusOr<std::unique_ptr<PsServer>> PsServer::Start(std::string address, int ps_task) {
  return Start(std::move(address), ps_task, PsServiceOptionsFromEnvironment());
}

absl::StatusOr<std::unique_ptr<PsServer>> PsServer::Start(std::string address, int ps_task,
                                                          PsServiceOptions options) {
  std::unique_ptr<PsServer> ps(new PsServer(ps_task, address, options));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, RuntimeServerCredentials(), &ps->port_);
  builder.RegisterService(&ps->service_);
  ConfigureRuntimeServer(builder, kPsMaxMessageBytes);
  // The push window (PushWindow) bounds the bodies a PS reads at once, but gRPC receives a body
  // before the handler reads it up to the stream's flow-control window, which its bandwidth-delay
  // probing grows to many MiB on a fast link: pushes waiting for the window would then sit in
  // receive buffers anyway. Without the probe an unread stream gets the default 64 KiB; a stream
  // being read still opens to its message's size, so admitted pushes arrive at full speed.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  // Beyond the window, each connected worker cost about 1.5 MiB: its connection's read buffer,
  // which gRPC sizes from what recent reads brought (MiB on a link moving pushes) and keeps while
  // the connection waits. A quota on gRPC's memory makes it read in small pieces once its memory
  // is under pressure, so what many workers cost is bounded as a whole (GrpcMemoryBytesFor).
  if (options.grpc_memory_bytes > 0) {
    grpc::ResourceQuota quota(absl::StrCat("tj-ps-", ps_task));
    quota.Resize(static_cast<size_t>(options.grpc_memory_bytes));
    builder.SetResourceQuota(quota);  // the builder keeps its own reference
  }
  ps->server_ = builder.BuildAndStart();
  if (ps->server_ == nullptr || ps->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("parameter server /job:ps/task:", ps_task, " cannot listen on ", address));
  }
  ps->address_ = absl::StrCat(HostOf(address), ":", ps->port_);
  spdlog::info("parameter server /job:ps/task:{} listening on {} (incarnation {:#x})", ps_task,
               ps->address_, ps->incarnation());
  return ps;
}

PsServer::~PsServer() {
  if (server_ == nullptr) return;  // Start failed before there was anything to stop
  Shutdown(absl::ZeroDuration());
  Wait();
}

void PsServer::Shutdown(absl::Duration grace) {
  if (shutdown_started_.exchange(true)) return;
  spdlog::info("parameter server /job:ps/task:{} shutting down (grace {})", ps_task(),
               absl::FormatDuration(grace));
  const int64_t still_running = service_.Drain(absl::Now() + grace);
  if (still_running > 0) {
    spdlog::warn("parameter server /job:ps/task:{}: cancelling {} calls still running after {}",
                 ps_task(), still_running, absl::FormatDuration(grace));
  }
  // The handlers are done; kResponseFlush lets their responses reach the wire before gRPC cancels
  // whatever is left and drops the idle client connections it would otherwise wait on.
  const absl::Duration flush = still_running > 0 ? absl::ZeroDuration() : kResponseFlush;
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(flush));
}

void PsServer::Wait() { server_->Wait(); }

}  // namespace tj
