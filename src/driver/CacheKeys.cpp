//===- CacheKeys.cpp - what the compile cache's keys cover ------------------===//
//
// Every field that changes what a level stores is in its key, with a name
// and a length (KeyBuilder), so adding a field never aliases old keys.
// docs/cache.md lists them; tests/unit/CacheTest.cpp checks that each one
// changes the key and that the input's path does not.
//
//===----------------------------------------------------------------------===//
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <climits>
#include <cstring>

#include "tritonc/base/Bytes.h"
#include "tritonc/base/Version.h"
#include "tritonc/driver/Driver.h"
#include "tritonc/emit/Emit.h"

namespace tritonc {

const std::string& compilerIdentity() {
  static const std::string identity = [] {
    std::string text = std::string(kVersion) + " " + kBuildId;
    struct stat st {};
    if (::stat("/proc/self/exe", &st) == 0) {
      // (fmt, not a chain of `+`: GCC 12 warns falsely about those, -Wrestrict.)
      text += fmt::format(" {} {}.{}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    }
    return text;
  }();
  return identity;
}

// The name an -O0 compile quotes in its run-time check messages.
std::string_view quotedName(const CompileOptions& options, std::string_view sourceName) {
  return options.optLevel == '0' ? sourceName : std::string_view();
}

cache::Key checkedIRKey(const CompileOptions& options, std::string_view source,
                        std::string_view identity, std::string_view importedNames) {
  cache::KeyBuilder key("l2");
  key.add("compiler", identity)
      .add("source", source)
      .add("imported-names", importedNames)
      .add("entry", options.entry);
  return key.finish();
}

cache::Key generatedCodeKey(const CompileOptions& options, std::string_view source,
                            std::string_view identity, std::string_view nvcc,
                            std::string_view sourceName, std::string_view importedNames) {
  cache::KeyBuilder key("l3");
  key.add("compiler", identity)
      .add("source", source)
      .add("opt", std::string(1, options.optLevel))
      .add("target", options.target)
      .add("source-name", quotedName(options, sourceName))
      .add("imported-names", quotedName(options, importedNames))
      .add("entry", options.entry);
  if (options.target != "pytorch") {
    std::string dtypes, archs;
    for (const std::string& d : options.cudaDTypes) dtypes += d + ",";
    for (const std::string& a : options.cudaArchs) archs += a + ",";
    key.add("cuda-dtypes", dtypes).add("cuda-archs", archs).add("nvcc", nvcc);
  }
  return key.finish();
}

cache::Key cudaObjectKey(const CompileOptions& options, std::string_view cu,
                         std::string_view nvcc) {
  // The header comment (up to the first empty line) names the source and the flags of
  // the compile; the code below it is what nvcc compiles.
  size_t body = cu.find("\n\n");
  cu = body == std::string_view::npos ? cu : cu.substr(body + 2);
  std::string flags, archs;
  for (std::string_view f : kNvccFlags) flags.append(f).push_back('\x1f');
  for (const std::string& a : options.cudaArchs) archs += a + ",";
  cache::KeyBuilder key("cuda-object");
  key.add("cu", cu).add("nvcc-flags", flags).add("cuda-archs", archs).add("nvcc", nvcc);
  return key.finish();
}

// ---- diagnostics ------------------------------------------------------------------------
// u32 count; per diagnostic: u16 kind, u8 severity, u8 located, u32 begin,
// u32 end, path, message, u32 notes; per note: u8 located, u32 begin, u32 end,
// message. Strings are u32 length + bytes (base/Bytes.h).


std::string encodeDiagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  ByteWriter w(out);
  w.put(static_cast<uint32_t>(diagnostics.size()));
  for (const Diagnostic& d : diagnostics) {
    w.put(static_cast<uint16_t>(d.kind));
    w.put(static_cast<uint8_t>(d.severity));
    w.put(static_cast<uint8_t>(d.source != nullptr ? 1 : 0));
    w.put(d.range.begin);
    w.put(d.range.end);
    w.put(d.location());
    w.putString(d.path);
    w.putString(d.message);
    w.put(static_cast<uint32_t>(d.notes.size()));
    for (const DiagnosticNote& n : d.notes) {
      w.put(static_cast<uint8_t>(n.source != nullptr ? 1 : 0));
      w.put(n.range.begin);
      w.put(n.range.end);
      w.putString(n.message);
    }
  }
  w.finish();
  return out;
}

Expected<std::vector<Diagnostic>> decodeDiagnostics(std::string_view bytes,
                                                    const SourceBuffer& source) {
  ByteReader r(bytes);
  std::vector<Diagnostic> diagnostics;
  uint32_t count = r.getCount(26);
  auto rangeOk = [&](SourceRange range) {
    return range.begin <= range.end && range.end <= source.text().size();
  };
  for (uint32_t i = 0; i < count && !r.failed(); ++i) {
    Diagnostic d;
    auto kind = r.get<uint16_t>();
    auto severity = r.get<uint8_t>();
    bool located = r.getBool();
    d.range.begin = r.get<uint32_t>();
    d.range.end = r.get<uint32_t>();
    auto caret = r.get<uint32_t>();
    d.path = r.getString();
    d.message = r.getString();
    if (kind >= diagKindCount() || severity > static_cast<uint8_t>(Severity::Error) ||
        (located && (!rangeOk(d.range) || caret > source.text().size()))) {
      r.fail();
      break;
    }
    d.kind = static_cast<Diag>(kind);
    d.severity = static_cast<Severity>(severity);
    d.source = located ? &source : nullptr;
    if (caret != d.range.begin) d.caret = caret;
    uint32_t notes = r.getCount(13);
    for (uint32_t j = 0; j < notes && !r.failed(); ++j) {
      DiagnosticNote n;
      bool noteLocated = r.getBool();
      n.range.begin = r.get<uint32_t>();
      n.range.end = r.get<uint32_t>();
      n.message = r.getString();
      if (noteLocated && !rangeOk(n.range)) r.fail();
      n.source = noteLocated ? &source : nullptr;
      d.notes.push_back(std::move(n));
    }
    diagnostics.push_back(std::move(d));
  }
  if (r.failed() || !r.atEnd()) {
    return Error{"malformed diagnostics"};
  }
  return diagnostics;
}

}  // namespace tritonc
