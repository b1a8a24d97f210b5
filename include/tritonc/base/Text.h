//===- Text.h - escaping and number formatting for dumps and JSON -*- C++ -*-===//
#pragma once

#include <string>
#include <string_view>

namespace tritonc {

/// Appends `text` as a JSON string literal (quotes included).
void appendJsonString(std::string& out, std::string_view text);

/// `text` in double quotes with \n \t \r \\ \" escaped and other control
/// bytes as \xNN, so that a dump line stays one line.
std::string quoteForDump(std::string_view text);

/// The shortest text that reads back as the same double, always with a '.'
/// or an exponent so that it reads as a float ("1.0", "1e-05", "inf").
std::string formatFloat(double value);

}  // namespace tritonc
