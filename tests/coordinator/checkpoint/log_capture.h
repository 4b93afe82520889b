// Captures what spdlog's default logger prints during a test, to check warning lines.
#pragma once

#include <memory>
#include <sstream>
#include <string>

#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace tj::testing {

class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink->set_pattern("[%l] %v");
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  ~LogCapture() { spdlog::set_default_logger(previous_); }

  std::string text() const { return stream_.str(); }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace tj::testing
