//===- Log.h - --verbose / --debug logging -----------------------*- C++ -*-===//
//
// A spdlog logger on stderr, created on first use only when --verbose or
// --debug asked for it, so that ordinary runs pay nothing at start-up.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

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
/// --verbose's line for a cache entry found corrupt, discarded and compiled
/// anew: `cache: L3 corrupt entry discarded for m.tri (<key>): <why>; ...`.
void logCorruptEntry(std::string_view level, std::string_view file, std::string_view key,
                     std::string_view why);

}  // namespace tritonc
