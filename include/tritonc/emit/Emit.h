//===- Emit.h - entry point of the emit stage -------------------*- C++ -*-===//
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tritonc/base/Expected.h"
#include "tritonc/base/PythonLimits.h"
#include "tritonc/ir/IR.h"

namespace tritonc {

struct EmitOptions {
  std::string sourceName;   ///< the input file, for the header comment
  std::string flags;        ///< the flags that shaped the code, for the header comment
  /// The CUDA target's library next to the module (`<stem>_kernels.so`), which
  /// the module registers with tritonrt; empty for `--target pytorch`.
  std::string cudaLibrary;
  /// Release each tensor of a function's straight-line body after its last
  /// use (`del t, h1`), as hand-written `x = f(x)` code does, instead of
  /// keeping every intermediate alive until `return` (-O2, -O3, -Os).
  bool releaseDeadTensors = false;
  /// Write a loop-carried `acc = concat([acc, x], dim=d)` as a list the loop
  /// appends to and one `torch.cat` after the loop (linear in the steps, not
  /// quadratic) (-O2, -O3, -Os).
  bool accumulateConcat = false;
  /// Write a short expression used once, by the next statement, into that
  /// statement instead of a local of its own (-Os: fewer lines, and the
  /// temporary dies with the statement).
  bool inlineSingleUse = false;
  /// Write a value used only by the `return` (or branch or loop result) right
  /// after it into that statement: `return F.relu(h)`, not `t = F.relu(h)`
  /// and `return t` (-O1 and up; -O0 keeps a local per value).
  bool returnDirectly = false;
  /// The name the -O0 run-time shape checks give the compiled file (the IR's
  /// `{source}`): the input as given on the command line.
  std::string checkSource = {};
  /// emitPyTorchPieces only: when given, the compiled file's declarations
  /// (by source name; `main` for main) whose pieces are made; the others get
  /// an empty piece (an incremental compile keeps their stored ones).
  /// Imported files' declarations are always made.
  const std::vector<std::string>* onlyDeclarations = nullptr;
};

/// The PyTorch module for an optimized IR module (TOOLCHAIN.md "Generated
/// PyTorch module"): one nn.Module per layer, a function per fn, constants,
/// `main()`, and `ENTRY` naming the entry layer. Imports only torch, math and
/// tritonrt.
/// The Python module of `module`, or an error when it cannot be expressed in
/// Python (control flow nested deeper than Python's indentation limit; the
/// error message is the nesting depth).
/// `jobs` threads may emit the layers of a big module in parallel (the code
/// does not depend on it).
Expected<std::string> emitPyTorch(const ir::Module& module, const EmitOptions& options,
                                  unsigned jobs = 1);

/// A PyTorch module in pieces, one per top-level declaration, for the
/// incremental compile: each piece depends only on its declaration's
/// optimized IR and on what that references, so the piece of an unchanged
/// declaration can be reused; `assemblePyTorch` puts them together exactly as
/// `emitPyTorch` does.
struct PyTorchPieces {
  /// The modules a piece's code uses (bits), for the module's imports.
  enum Import : uint8_t { kMath = 1, kTorch = 2, kNN = 4, kF = 8, kTritonrt = 16 };
  struct Piece {
    std::string sourceName;  ///< the declaration's name in the source ("main" for main)
    std::string name;        ///< its Python name
    std::string code;        ///< its definition, ending in a newline
    uint8_t imports = 0;     ///< Import bits
    bool isMain = false;
    /// A constant defined after the layers and fns: its initializer calls
    /// one (or reads such a constant), which Python needs defined first.
    bool late = false;
    uint32_t origin = 0;     ///< the file it comes from (ir::Module::origins; 0: the compiled one)
  };
  std::vector<Piece> globals;    ///< constants, in module order
  std::vector<Piece> functions;  ///< layers and fns in module order, then main
  std::string entry;             ///< ENTRY's class name (empty: none)
};
Expected<PyTorchPieces> emitPyTorchPieces(const ir::Module& module, const EmitOptions& options,
                                          unsigned jobs = 1);
/// A piece's code as assembled (owned elsewhere: by PyTorchPieces, or by the
/// cache entry the incremental compile read it from).
struct PieceRef {
  std::string_view code;
  uint8_t imports = 0;
  bool isMain = false;
  bool late = false;  ///< a constant placed after the functions (Piece::late)
};
/// The module of some pieces: header, the imports the code uses, constants,
/// functions, the late constants, ENTRY and the `__main__` guard. `globals` and `functions` are
/// the pieces in order (the incremental compile gathers them from several
/// compiles); `entry` is ENTRY's class name, empty for none.
std::string assemblePyTorch(std::span<const PieceRef> globals, std::span<const PieceRef> functions,
                            std::string_view entry, const EmitOptions& options);

// ---- names stamped after emission --------------------------------------------------
//
// The generated files name their input only in a header comment and (for the
// CUDA target) the library the module loads. The driver emits them with these
// placeholders and stamps the real names in afterwards, so that the cache can
// serve one entry to identical sources at any path and under any name.

inline constexpr std::string_view kSourceNamePlaceholder = "@TRITONC_SOURCE@";
inline constexpr std::string_view kCudaLibraryPlaceholder = "@TRITONC_KERNELS_SO@";
/// The `<stem>` of `<stem>_kernels.cu` in the build command of its header.
inline constexpr std::string_view kCudaStemPlaceholder = "@TRITONC_STEM@";

/// Replaces the placeholders of a PyTorch module (their first occurrence: the
/// header comes before any user text) by the input's file name and the CUDA
/// library's file name, each escaped for where it appears.
std::string stampPyTorch(std::string code, std::string_view sourceName,
                         std::string_view cudaLibrary);
/// The same for a `<stem>_kernels.cu` (its input's name, and the stem of the
/// files the driver writes in the build command of its header, quoted for a
/// shell where it needs to be).
std::string stampCuda(std::string code, std::string_view sourceName, std::string_view stem);


// ---- CUDA target ------------------------------------------------------------------------

/// One specialized ternary kernel: a matmul or convolution whose sizes are
/// known once the entry layer's hyperparameters take their defaults.
struct TernaryKernel {
  enum class Kind : uint8_t { Linear, Conv2d };
  Kind kind = Kind::Linear;
  /// Linear: y[m, n] = x[m, :] . W; layout "nk" (W is [n, k], F.linear) or "kn"
  /// (W is [k, n], x @ W).
  int64_t n = 0, k = 0;
  bool kn = false;
  /// Conv2d (NCHW; W is [cout, cin / groups, kh, kw]).
  int64_t cin = 0, cout = 0, kh = 0, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t groups = 1;
  /// The fused activation, by its tritonrt name: none, relu, gelu, silu, relu6.
  std::string act = "none";
  /// A residual added before the activation (`act(conv(x) + r)`, a ResNet
  /// block's end): the launcher takes a pointer to r, of y's shape, after bias;
  /// its symbol ends `_<act>_res_v<n>`.
  bool residual = false;

  /// The launcher's symbol for an element type (f32, f16, bf16) and tile
  /// variant; the runtime derives the same name from the module it runs.
  std::string symbol(std::string_view dtype, int variant) const;
};

/// The ternary kernels a model needs, in a deterministic order without
/// duplicates: the module tree of the entry layer is walked with its
/// hyperparameters' defaults.
std::vector<TernaryKernel> planTernaryKernels(const ir::Module& module);

/// The flags nvcc builds `<stem>_kernels.so` with, before the `-gencode`s, `-o`
/// and the source: the driver runs them and the `.cu`'s header shows them, so
/// the header's command builds the library tritonc would. Stripped: the local
/// symbols name nvcc's temporary files (their process ids), so that one source
/// built twice gave two libraries; the launchers are dynamic symbols, which stay.
inline constexpr std::array<std::string_view, 8> kNvccFlags = {
    "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-Xlinker", "--strip-all", "-w"};

struct CudaEmitOptions {
  std::string sourceName;
  std::string flags;
  std::vector<std::string> dtypes = {"f32", "f16", "bf16"};
  int variants = 1;         ///< tile variants per kernel (-O3: 3, for the auto-tuner)
  std::vector<std::string> archs = {"80", "90"};  ///< for the build command in the header
};

/// `<stem>_kernels.cu`: the kernel templates of kernels/cuda (embedded, so the
/// file compiles on its own) and one `extern "C"` launcher per kernel, element
/// type and variant (TOOLCHAIN.md "CUDA target").
std::string emitCuda(const std::vector<TernaryKernel>& kernels, const CudaEmitOptions& options);

/// The version of the launchers' C interface; `tck_abi_version()` returns it
/// and tritonrt refuses a library with another.
inline constexpr int kCudaAbiVersion = 1;

}  // namespace tritonc
