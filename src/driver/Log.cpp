//===- Log.cpp ------------------------------------------------------------===//
#include "Log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace tritonc {

namespace {
LogLevel gLevel = LogLevel::Off;

spdlog::logger& logger() {
  // Thread-safe sink: the workers of -j log too.
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto created = std::make_shared<spdlog::logger>("tritonc", sink);
    created->set_pattern("tritonc: %v");
    created->set_level(spdlog::level::trace);
    return created;
  }();
  return *instance;
}
}  // namespace

void setLogLevel(LogLevel level) { gLevel = level; }

bool logEnabled(LogLevel level) {
  return gLevel != LogLevel::Off && static_cast<int>(level) <= static_cast<int>(gLevel);
}

void logMessage(LogLevel level, const std::string& message) {
  if (!logEnabled(level)) {
    return;
  }
  if (level == LogLevel::Debug) {
    logger().debug("{}", message);
  } else {
    logger().info("{}", message);
  }
}

}  // namespace tritonc
