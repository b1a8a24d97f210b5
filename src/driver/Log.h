//===- Log.h - --verbose / --debug logging -----------------------*- C++ -*-===//
//
// A spdlog logger on stderr, created on first use only when --verbose or
// --debug asked for it, so that ordinary runs pay nothing at start-up.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace tritonc {

enum class LogLevel { Off, Verbose, Debug };

/// Sets the level, and whether lines are JSON objects
/// (`{"log":"verbose","message":...}`, under --diagnostics-format=json); call
/// once before logging.
void setLogLevel(LogLevel level, bool json);
bool logEnabled(LogLevel level);
/// Writes one line `tritonc: <message>` (or its JSON object) when `level` is
/// enabled.
void logMessage(LogLevel level, const std::string& message);

}  // namespace tritonc
