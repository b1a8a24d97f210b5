//===- Log.cpp ------------------------------------------------------------===//
#include "Log.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "tritonc/base/Text.h"

namespace tritonc {

namespace {
LogLevel gLevel = LogLevel::Off;
bool gJson = false;

spdlog::logger& logger() {
  // Thread-safe sink: the workers of -j log too.
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto created = std::make_shared<spdlog::logger>("tritonc", sink);
    created->set_pattern(gJson ? "%v" : "tritonc: %v");
    created->set_level(spdlog::level::trace);
    return created;
  }();
  return *instance;
}
}  // namespace

void setLogLevel(LogLevel level, bool json) {
  gLevel = level;
  gJson = json;
}

bool logEnabled(LogLevel level) {
  return gLevel != LogLevel::Off && static_cast<int>(level) <= static_cast<int>(gLevel);
}

void logMessage(LogLevel level, const std::string& message) {
  if (!logEnabled(level)) {
    return;
  }
  std::string line;
  if (gJson) {  // {"log":"verbose","message":"..."}: stderr stays JSON lines only
    line = level == LogLevel::Debug ? "{\"log\":\"debug\",\"message\":"
                                    : "{\"log\":\"verbose\",\"message\":";
    appendJsonString(line, message);
    line += '}';
  }
  const std::string& text = gJson ? line : message;
  if (level == LogLevel::Debug) {
    logger().debug("{}", text);
  } else {
    logger().info("{}", text);
  }
}

void logCorruptEntry(std::string_view level, std::string_view file, std::string_view key,
                     std::string_view why) {
  if (!logEnabled(LogLevel::Verbose)) return;
  logMessage(LogLevel::Verbose,
             fmt::format("cache: {} corrupt entry discarded for {} ({}): {}; compiling anew",
                         level, file, key, why));
}

}  // namespace tritonc
