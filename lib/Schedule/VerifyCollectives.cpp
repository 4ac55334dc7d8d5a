//===- VerifyCollectives.cpp - matching collectives across chips -*- C++ -*-===//
#include "nova/Schedule/Passes.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

#define DEBUG_TYPE "nova-verify-collectives"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAVERIFYCOLLECTIVES
#include "nova/Schedule/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {

bool isGroupCollective(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, BarrierOp>(op);
}

/// What must agree between two chips' copies of a group collective: the op,
/// its attributes (kind, dims, groups) and its buffer types.
std::string describe(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName() << "'";
  for (NamedAttribute attr : op->getAttrDictionary())
    if (attr.getName() != "groups")
      os << " " << attr.getName().strref() << " " << attr.getValue();
  os << " on (";
  llvm::interleaveComma(op->getOperandTypes(), os);
  os << ")";
  if (auto groups = op->getAttrOfType<ArrayAttr>("groups")) {
    os << " groups [";
    llvm::interleaveComma(groups.getAsRange<DenseI64ArrayAttr>(), os,
                          [&](DenseI64ArrayAttr group) {
                            os << "[";
                            llvm::interleaveComma(group.asArrayRef(), os);
                            os << "]";
                          });
    os << "]";
  }
  return text;
}

bool groupHolds(Operation *op, int64_t a, int64_t b) {
  auto groups = op->getAttrOfType<ArrayAttr>("groups");
  if (!groups)
    return true; // No groups attribute: every chip takes part.
  for (auto group : groups.getAsRange<DenseI64ArrayAttr>())
    if (llvm::is_contained(group.asArrayRef(), a))
      return llvm::is_contained(group.asArrayRef(), b);
  return false;
}

struct ChipProgram {
  func::FuncOp func;
  SmallVector<Operation *> collectives; // Group collectives, in order.
  SmallVector<SendOp> sends;
  SmallVector<RecvOp> recvs;
};

struct VerifyCollectivesPass
    : public nova::impl::NovaVerifyCollectivesBase<VerifyCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    reported.clear();
    unchecked.clear();
    std::map<int64_t, ChipProgram> chips;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      auto ids = func->getAttrOfType<DenseI64ArrayAttr>(NovaDialect::ChipsAttrHelper::getNameStr());
      if (!ids)
        continue;
      ChipProgram program{func, {}, {}, {}};
      bool straightLine = true;
      func.walk([&](Operation *op) {
        bool communicates = isGroupCollective(op) || isa<SendOp, RecvOp>(op);
        if (!communicates)
          return;
        if (op->getParentOp() != func)
          straightLine = false;
        if (isGroupCollective(op))
          program.collectives.push_back(op);
        else if (auto send = dyn_cast<SendOp>(op))
          program.sends.push_back(send);
        else
          program.recvs.push_back(cast<RecvOp>(op));
      });
      if (!straightLine) {
        // Only the simulator can tell; its peers are not checked against it.
        for (int64_t chip : ids.asArrayRef())
          unchecked.insert(chip);
        continue;
      }
      for (int64_t chip : ids.asArrayRef())
        chips[chip] = program;
    }
    bool ok = true;
    for (auto &[a, pa] : chips)
      for (auto &[b, pb] : chips)
        if (a < b && pa.func != pb.func)
          ok &= succeeded(checkGroups(a, pa, b, pb));
    for (auto &[a, pa] : chips)
      ok &= succeeded(checkSendRecv(a, pa, chips));
    if (!ok)
      return signalPassFailure();
    // A check only: the IR needs no verifying again (a whole-module verify).
    markAllAnalysesPreserved();
  }

  DenseSet<Operation *> reported;
  DenseSet<int64_t> unchecked; // Chips whose program has control flow.

  LogicalResult checkGroups(int64_t a, const ChipProgram &pa, int64_t b,
                            const ChipProgram &pb) {
    auto shared = [](const ChipProgram &p, int64_t self, int64_t other) {
      SmallVector<Operation *> ops;
      for (Operation *op : p.collectives)
        if (groupHolds(op, self, other))
          ops.push_back(op);
      return ops;
    };
    SmallVector<Operation *> sa = shared(pa, a, b), sb = shared(pb, b, a);
    for (size_t i = 0; i < std::max(sa.size(), sb.size()); ++i) {
      Operation *x = i < sa.size() ? sa[i] : nullptr;
      Operation *y = i < sb.size() ? sb[i] : nullptr;
      if (x && y && describe(x) == describe(y))
        continue;
      Operation *at = x ? x : y;
      // One error per op, however many chip pairs it fails for.
      if (!reported.insert(at).second)
        return failure();
      InFlightDiagnostic diag = at->emitOpError()
                                << "collective #" << i << " between chip " << a
                                << " and chip " << b << " does not match: chip " << a
                                << " issues " << (x ? describe(x) : "nothing")
                                << ", chip " << b << " issues "
                                << (y ? describe(y) : "nothing");
      if (x && y)
        diag.attachNote(y->getLoc()) << "chip " << b << "'s collective";
      return failure();
    }
    return success();
  }

  LogicalResult checkSendRecv(int64_t a, const ChipProgram &pa,
                              const std::map<int64_t, ChipProgram> &chips) {
    // Per (peer, channel): the buffer types chip `a` sends, in order, must be
    // what the peer receives from `a` on that channel.
    std::map<std::pair<int64_t, int64_t>, SmallVector<SendOp>> sends;
    for (SendOp send : pa.sends)
      sends[{static_cast<int64_t>(send.getPeer()),
             static_cast<int64_t>(send.getChannel())}].push_back(send);
    for (auto &[key, list] : sends) {
      auto [peer, channel] = key;
      if (unchecked.contains(peer))
        continue;
      auto it = chips.find(peer);
      if (it == chips.end())
        return list.front().emitOpError()
               << "sends from chip " << a << " to chip " << peer
               << ", which runs no program";
      SmallVector<RecvOp> recvs;
      for (RecvOp recv : it->second.recvs)
        if (static_cast<int64_t>(recv.getPeer()) == a &&
            static_cast<int64_t>(recv.getChannel()) == channel)
          recvs.push_back(recv);
      for (size_t i = 0; i < list.size(); ++i) {
        if (i >= recvs.size())
          return list[i].emitOpError()
                 << "send #" << i << " from chip " << a << " to chip " << peer
                 << " on channel " << channel << " has no matching nova.recv on chip "
                 << peer;
        if (list[i].getInput().getType() != recvs[i].getOutput().getType()) {
          InFlightDiagnostic diag =
              list[i].emitOpError()
              << "send #" << i << " from chip " << a << " to chip " << peer
              << " on channel " << channel << " sends "
              << list[i].getInput().getType() << " but chip " << peer
              << " receives " << recvs[i].getOutput().getType();
          diag.attachNote(recvs[i].getLoc()) << "chip " << peer << "'s nova.recv";
          return failure();
        }
      }
      if (recvs.size() > list.size())
        return recvs[list.size()].emitOpError()
               << "receives more from chip " << a << " on channel " << channel
               << " than chip " << a << " sends";
    }
    // A receive whose sender never sends on that channel at all.
    for (RecvOp recv : pa.recvs) {
      int64_t peer = recv.getPeer(), channel = recv.getChannel();
      if (unchecked.contains(peer))
        continue;
      auto it = chips.find(peer);
      bool sent = it != chips.end() &&
                  llvm::any_of(it->second.sends, [&](SendOp send) {
                    return static_cast<int64_t>(send.getPeer()) == a &&
                           static_cast<int64_t>(send.getChannel()) == channel;
                  });
      if (!sent)
        return recv.emitOpError() << "chip " << a << " receives from chip " << peer
                                  << " on channel " << channel
                                  << ", but chip " << peer << " never sends it";
    }
    return success();
  }
};
} // namespace
