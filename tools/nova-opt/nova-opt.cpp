//===- nova-opt.cpp - Nova's mlir-opt ---------------------------*- C++ -*-===//
//
// Every upstream dialect, pass and extension, plus Nova's. Input is parsed
// without verifying and checked by nova-check-input first: some upstream
// verifiers assert on malformed input rather than diagnosing it.
//
//===----------------------------------------------------------------------===//
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
#include "nova/Transforms/Passes.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

/// The first decimal integer literal outside comments and strings whose
/// magnitude needs more than 64 bits. MLIR 22's custom parsers of dense
/// integer arrays (`linalg.transpose`'s permutation) report such a literal
/// and then abort on the null attribute they store; no literal that large
/// fits any type Nova compiles, so it is refused before parsing.
static std::optional<size_t> oversizedIntegerLiteral(llvm::StringRef text) {
  auto isWord = [](char c) { return llvm::isAlnum(c) || c == '_' || c == '.' ||
                                    c == '$' || c == '%' || c == '#' ||
                                    c == '@' || c == '^' || c == '!'; };
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
    if (llvm::isDigit(c) && (i == 0 || !isWord(text[i - 1]))) {
      size_t end = i;
      while (end < e && llvm::isDigit(text[end]))
        ++end;
      if (end < e && isWord(text[end]) && text[end] != '.') {
        i = end; // part of a word (a hex literal, 4x8, 1e5)
        continue;
      }
      llvm::StringRef digits = text.slice(i, end).ltrim('0');
      if (digits.size() > 20 ||
          (digits.size() == 20 && digits > "18446744073709551615"))
        return i;
      i = end;
      continue;
    }
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
    config.setPassPipelineSetupFn([requested](PassManager &pm) {
      pm.addPass(mlir::nova::createNovaCheckInput());
      return requested.setupPassPipeline(pm);
    });
  }

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  if (std::optional<size_t> at = oversizedIntegerLiteral(input->getBuffer())) {
    llvm::SourceMgr sources;
    llvm::StringRef text = input->getBuffer();
    sources.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
    size_t end = text.find_if_not(llvm::isDigit, *at);
    sources.PrintMessage(llvm::errs(), llvm::SMLoc::getFromPointer(text.data() + *at),
                         llvm::SourceMgr::DK_Error,
                         "integer literal " + text.slice(*at, end) +
                             " does not fit in 64 bits");
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
