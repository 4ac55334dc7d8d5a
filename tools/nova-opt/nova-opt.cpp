//===- nova-opt.cpp - Nova's mlir-opt ---------------------------*- C++ -*-===//
//
// Every upstream dialect, pass and extension, plus Nova's. Input is parsed
// without verifying and checked by nova-check-input first: some upstream
// verifiers assert on malformed input rather than diagnosing it.
//
//===----------------------------------------------------------------------===//
#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "nova/InitAllDialects.h"
#include "nova/InitAllExtensions.h"
#include "nova/InitAllPasses.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

/// Input that MLIR 22's parsers abort on instead of diagnosing, refused
/// before parsing (position in the text, message):
///  - a decimal integer literal needing more than 64 bits, and a
///    `permutation = [...]` / `dimensions = [...]` list that is not all
///    64-bit integers: linalg's custom parsers (transpose, broadcast, reduce)
///    report the bad list, then store a null attribute and abort;
///  - `array<index: ...>`: the dense-array parser asks index for a bit width.
static std::optional<std::pair<size_t, std::string>>
parserHazard(llvm::StringRef text) {
  auto isWord = [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.' || c == '$' || c == '%' ||
           c == '#' || c == '@' || c == '^' || c == '!';
  };
  auto fits64 = [](llvm::StringRef digits) {
    digits = digits.ltrim('0');
    return digits.size() < 20 ||
           (digits.size() == 20 && digits <= "18446744073709551615");
  };
  auto skipSpace = [&](size_t i) {
    while (i < text.size() && llvm::isSpace(text[i]))
      ++i;
    return i;
  };
  // `[` integers separated by commas `]`, each fitting 64 bits.
  auto integerList = [&](size_t i) {
    i = skipSpace(i);
    if (i >= text.size() || text[i] != '[')
      return false;
    i = skipSpace(i + 1);
    if (i < text.size() && text[i] == ']')
      return true;
    while (true) {
      if (i < text.size() && text[i] == '-')
        ++i;
      size_t end = i;
      while (end < text.size() && llvm::isDigit(text[end]))
        ++end;
      if (end == i || !fits64(text.slice(i, end)))
        return false;
      i = skipSpace(end);
      if (i < text.size() && text[i] == ']')
        return true;
      if (i >= text.size() || text[i] != ',')
        return false;
      i = skipSpace(i + 1);
    }
  };
  for (size_t i = 0, e = text.size(); i < e;) {
    char c = text[i];
    if (c == '/' && i + 1 < e && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == llvm::StringRef::npos)
        break;
      continue;
    }
    if (c == '"') {
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      ++i;
      continue;
    }
    if (i > 0 && isWord(text[i - 1])) {
      ++i;
      continue;
    }
    if (llvm::isDigit(c)) {
      size_t end = i;
      while (end < e && llvm::isDigit(text[end]))
        ++end;
      bool word = end < e && isWord(text[end]) && text[end] != '.';
      if (!word && !fits64(text.slice(i, end)))
        return std::make_pair(i, "integer literal " + text.slice(i, end).str() +
                                     " does not fit in 64 bits");
      i = end;
      continue;
    }
    for (llvm::StringRef keyword : {"permutation", "dimensions"}) {
      if (!text.substr(i).starts_with(keyword) ||
          (i + keyword.size() < e && isWord(text[i + keyword.size()])))
        continue;
      size_t eq = skipSpace(i + keyword.size());
      size_t list = skipSpace(eq + 1);
      if (eq < e && text[eq] == '=' && list < e && text[list] == '[' &&
          !integerList(list))
        return std::make_pair(i, "'" + keyword.str() +
                                     "' must be a list of 64-bit integers");
    }
    if (text.substr(i).starts_with("array<") &&
        text.substr(skipSpace(i + 6)).starts_with("index"))
      return std::make_pair(i, std::string("dense arrays of index are not "
                                           "supported (use i64)"));
    ++i;
  }
  return std::nullopt;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAllPasses();
  ::nova::registerAllPasses();

  DialectRegistry registry;
  // Nova's extensions first: the first attachment of an interface wins, and
  // Nova's convolution sharding model replaces upstream's (which
  // registerAllDialects attaches).
  ::nova::registerAllExtensions(registry);
  registerAllDialects(registry);
  ::nova::registerAllDialects(registry);
  registerAllExtensions(registry);

  auto [inputFilename, outputFilename] =
      registerAndParseCLIOptions(argc, argv, "Nova optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects()) {
    llvm::outs() << "Available Dialects: ";
    llvm::interleave(registry.getDialectNames(), llvm::outs(), ",");
    llvm::outs() << "\n";
    return EXIT_SUCCESS;
  }
  if (config.shouldListPasses()) {
    printRegisteredPasses();
    return EXIT_SUCCESS;
  }
  if (config.shouldVerifyOnParsing()) {
    MlirOptMainConfig requested = config;
    config.verifyOnParsing(false);
    // Passes cannot be put in front of a built pass manager, so the
    // requested pipeline is printed and parsed again with nova-check-input
    // as its first pass.
    config.setPassPipelineSetupFn([requested](PassManager &pm) -> LogicalResult {
      if (failed(requested.setupPassPipeline(pm)))
        return failure();
      std::string text;
      llvm::raw_string_ostream os(text);
      pm.printAsTextualPipeline(os);
      size_t open = text.find('(');
      if (open == std::string::npos || text.back() != ')')
        return emitError(UnknownLoc::get(pm.getContext()))
               << "nova-opt cannot prepend nova-check-input to '" << text << "'";
      std::string inner = text.substr(open + 1, text.size() - open - 2);
      FailureOr<OpPassManager> checked = parsePassPipeline(
          text.substr(0, open) + "(nova-check-input" +
          (inner.empty() ? "" : "," + inner) + ")");
      if (failed(checked))
        return failure();
      static_cast<OpPassManager &>(pm) = std::move(*checked);
      return success();
    });
  }

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  // Bytecode (a stage one Nova tool hands the next) was written by the
  // tools from IR that parsed; its bytes are not text to scan.
  std::optional<std::pair<size_t, std::string>> hazard;
  if (!isBytecode(*input))
    hazard = parserHazard(input->getBuffer());
  if (hazard) {
    llvm::SourceMgr sources;
    const char *at = input->getBufferStart() + hazard->first;
    sources.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
    sources.PrintMessage(llvm::errs(), llvm::SMLoc::getFromPointer(at),
                         llvm::SourceMgr::DK_Error, hazard->second);
    return EXIT_FAILURE;
  }
  std::unique_ptr<llvm::ToolOutputFile> output = openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
