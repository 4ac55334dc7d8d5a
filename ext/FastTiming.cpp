//===- FastTiming.cpp - The simulator's timing-only event loop, compiled --===//
//
// A Python extension module (nova.sim._fast_timing) running the discrete-event
// loop of nova.sim.engines.Machine for timing-only runs: sequencer streams,
// engine queues, semaphores, the matrix unit's pipelining and DMA flows over
// the shared-bandwidth pool (nova.sim.timing.BandwidthPool). It performs the
// same double-precision operations in the same order as the Python loop and
// breaks ties the same way (events by (time, sequence number), flows re-rated
// in insertion order), so simulated times are bit-identical; the Python side
// (nova/sim/fast_timing.py) prepares the static costs with the Python cost
// model and writes the results back into the Machine. Whatever this loop does
// not model (collectives, send/recv, indexed DMA, peer DMA, faults, budgets,
// deadlocks) makes it return None: the Python loop then runs instead, and
// raises or reports exactly as before.
//
//===----------------------------------------------------------------------===//

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <queue>
#include <vector>

namespace {

constexpr int kNumSems = 64;
constexpr int kMaxRes = 4;
constexpr uint64_t kU32Max = 0xffffffffull;

// Step kinds (nova.sim.stream) and opcode classes (fast_timing.py).
enum StepKind { DISPATCH = 0, WAIT = 1, SIGNAL = 2, HALT = 3 };
enum OpClass { NOP = 0, MATMUL = 1, VECTOR = 2, DMA = 3 };
enum EvType { RESUME, WAKE, COMPLETE, DMAFLOW, FINISH };
enum Block { B_NONE = -3, B_SEM = -2, B_TIME = -1 }; // >= 0: the full queue

struct Step {
  int64_t m, kind, dec, back;
};

// Columns of the decoded-instruction table (float64, fast_timing.DEC_COLUMNS).
struct Dec {
  int qkey, cls, pc, nres;
  double cost, setup, nbytes;
  uint64_t waits, signals;
  int res[kMaxRes];
  double w[kMaxRes];
};

struct Op {
  int dec;
  double t, start;
  int64_t step; // the stream step that dispatched it (the start order, when recorded)
};

struct QueueState {
  std::deque<Op> pending;
  bool running = false, wake = false;
  double busy = 0.0;
  int64_t count = 0;
};

struct ChipState {
  std::vector<Step> steps;
  std::vector<Dec> decs;
  int npc = 0;
  double t = 0.0, tEnd = 0.0;
  bool halted = false, atStep = false;
  int block = B_NONE;
  size_t si = 0;
  int64_t sems[kNumSems] = {0};
  double semTime[kNumSems] = {0.0};
  bool hasMx = false;
  double mx[3] = {0.0, 0.0, 0.0};
  std::vector<QueueState> queues;
  std::vector<int> semBlocked; // insertion-ordered set of queue keys
  int64_t scalarCount = 0, executed = 0;
  std::vector<double> pcBusy;
  std::vector<int64_t> pcCount;
  // Loops over layers (nova/sim/layers.py): each step's layer (-1: none; empty
  // without such loops) and busy ns per (decoded row, layer).
  std::vector<int64_t> stepLayer;
  int64_t numLayers = 0;
  std::vector<double> layerBusy;
};

struct Flow {
  double remaining, rate, t0;
  int64_t version;
  int nres, chip, queue;
  int res[kMaxRes];
  double w[kMaxRes];
};

struct Event {
  double t;
  uint64_t seq;
  int type, a, b;
  int64_t v;
};
struct Later {
  bool operator()(const Event &x, const Event &y) const {
    return x.t > y.t || (x.t == y.t && x.seq > y.seq);
  }
};

struct Config {
  double cycle, tMax, nop, weightLoad, fillDrain;
  int64_t depth, maxInstructions;
  bool overlap;
};

/// Thrown (as a flag, no C++ exceptions) when the run needs the Python loop.
struct Machine {
  Config cfg;
  std::vector<ChipState> chips;
  std::vector<double> bw, since, busy, bytes;
  std::vector<char> hasBusy, hasBytes;
  std::vector<int> busyOrder, bytesOrder;
  std::vector<std::vector<int>> on;
  std::vector<Flow> flows;
  std::priority_queue<Event, std::vector<Event>, Later> heap;
  uint64_t seq = 0;
  double now = 0.0;
  int64_t events = 0;
  bool bail = false;
  // Functional runs on the compiled loop (nova.sim.decoupled): every start as
  // (chip, step), in the order the Python loop would run the data effects.
  bool recordOrder = false;
  std::vector<int64_t> order;

  void schedule(double t, int type, int a, int b = 0, int64_t v = 0) {
    heap.push(Event{t, seq++, type, a, b, v});
  }

  // Sequencer (Machine._run_stream) ---------------------------------------
  void runStream(int c) {
    ChipState &ch = chips[c];
    double t = ch.t > now ? ch.t : now;
    size_t i = ch.si;
    bool atStep = ch.atStep;
    const double cyc = cfg.cycle;
    int64_t n = 0, k = 0;
    while (true) {
      const Step &st = ch.steps[i];
      if (!atStep) {
        int64_t m = st.m;
        if (m) {
          for (int64_t j = 0; j < m; ++j)
            t += cyc;
          if (st.back && t > cfg.tMax) {
            bail = true;
            return;
          }
          n += m;
        }
        atStep = true;
      }
      if (st.kind == DISPATCH) {
        const Dec &d = ch.decs[st.dec];
        QueueState &q = ch.queues[d.qkey];
        if ((int64_t)q.pending.size() >= cfg.depth) {
          ch.block = d.qkey;
          break;
        }
        q.pending.push_back(Op{(int)st.dec, t, 0.0, (int64_t)i});
        if (!q.running && q.pending.size() == 1 && !q.wake) {
          q.wake = true;
          schedule(t, WAKE, c, d.qkey);
        }
        t += cyc;
        k += 1;
      } else if (st.kind == WAIT) {
        if (t > now) {
          ch.block = B_TIME;
          schedule(t, RESUME, c);
          break;
        }
        uint64_t waits = ch.decs[st.dec].waits;
        if (!semsPositive(ch, waits)) {
          ch.block = B_SEM;
          break;
        }
        forEachBit(waits, [&](int s) { ch.sems[s] -= 1; });
        n += 1;
        t += cyc;
      } else if (st.kind == SIGNAL) {
        if (t > now) {
          ch.block = B_TIME;
          schedule(t, RESUME, c);
          break;
        }
        if (!signal(ch, ch.decs[st.dec].signals, t))
          return;
        n += 1;
        t += cyc;
        ch.si = i + 1;
        ch.atStep = false;
        ch.t = t;
        i = i + 1;
        atStep = false;
        semsChanged(c);
        if (bail)
          return;
        continue;
      } else { // HALT (eligible streams end with it)
        n += 1;
        ch.halted = true;
        double end = t + cyc;
        if (end > ch.tEnd)
          ch.tEnd = end;
        t += cyc;
        i += 1;
        atStep = false;
        break;
      }
      i += 1;
      atStep = false;
    }
    ch.si = i;
    ch.atStep = atStep;
    ch.t = t;
    ch.scalarCount += n;
    ch.executed += n + k;
    if (ch.executed > cfg.maxInstructions)
      bail = true;
  }

  template <typename F> static void forEachBit(uint64_t mask, F f) {
    while (mask) {
      int s = __builtin_ctzll(mask);
      f(s);
      mask &= mask - 1;
    }
  }

  static bool semsPositive(const ChipState &ch, uint64_t mask) {
    while (mask) {
      int s = __builtin_ctzll(mask);
      if (ch.sems[s] <= 0)
        return false;
      mask &= mask - 1;
    }
    return true;
  }

  /// Signals every semaphore of ``mask`` at ``t``; false (and bail) on overflow.
  bool signal(ChipState &ch, uint64_t mask, double t) {
    while (mask) {
      int s = __builtin_ctzll(mask);
      if ((uint64_t)ch.sems[s] >= kU32Max) {
        bail = true;
        return false;
      }
      ch.sems[s] += 1;
      ch.semTime[s] = t;
      mask &= mask - 1;
    }
    return true;
  }

  // Queues (Machine._try_start / _complete / _sems_changed) ------------------
  void tryStart(int c, int qk) {
    ChipState &ch = chips[c];
    QueueState &q = ch.queues[qk];
    if (q.running || q.pending.empty())
      return;
    Op &o = q.pending.front();
    if (o.t > now) {
      if (!q.wake) {
        q.wake = true;
        schedule(o.t, WAKE, c, qk);
      }
      return;
    }
    const Dec &d = ch.decs[o.dec];
    if (d.waits) {
      if (!semsPositive(ch, d.waits)) {
        bool present = false;
        for (int x : ch.semBlocked)
          present |= x == qk;
        if (!present)
          ch.semBlocked.push_back(qk);
        return;
      }
      forEachBit(d.waits, [&](int s) { ch.sems[s] -= 1; });
    }
    q.running = true;
    o.start = now;
    if (recordOrder) {
      order.push_back(c);
      order.push_back(o.step);
    }
    double dur;
    switch (d.cls) {
    case NOP:
      if (qk == 0)
        matrixNop(ch, o, d);
      dur = cfg.nop;
      break;
    case MATMUL:
      dur = matmulTime(ch, o, d);
      break;
    case VECTOR:
      dur = d.cost;
      break;
    default: // DMA: the flow starts after the setup time
      schedule(now + d.setup, DMAFLOW, c, qk);
      return;
    }
    schedule(now + dur, COMPLETE, c, qk);
  }

  void complete(int c, int qk) {
    ChipState &ch = chips[c];
    QueueState &q = ch.queues[qk];
    Op o = q.pending.front();
    q.pending.pop_front();
    q.running = false;
    double dur = now - o.start;
    q.busy += dur;
    q.count += 1;
    const Dec &d = ch.decs[o.dec];
    ch.pcBusy[d.pc] += dur;
    ch.pcCount[d.pc] += 1;
    if (!ch.stepLayer.empty()) {
      int64_t layer = ch.stepLayer[o.step];
      if (layer >= 0)
        ch.layerBusy[o.dec * ch.numLayers + layer] += dur;
    }
    if (now > ch.tEnd)
      ch.tEnd = now;
    if (d.signals) {
      if (!signal(ch, d.signals, now))
        return;
      semsChanged(c);
      if (bail)
        return;
    }
    if (ch.block == qk) {
      ch.block = B_TIME;
      schedule(now, RESUME, c);
    }
    tryStart(c, qk);
  }

  void semsChanged(int c) {
    ChipState &ch = chips[c];
    if (!ch.semBlocked.empty()) {
      std::vector<int> blocked;
      blocked.swap(ch.semBlocked);
      for (int qk : blocked)
        tryStart(c, qk);
    }
    if (ch.block == B_SEM) {
      ch.block = B_TIME;
      schedule(now, RESUME, c);
    }
  }

  // Matrix unit (nova.sim.engines_matrix) ------------------------------------
  double matrixReady(const ChipState &ch, const Op &o, const Dec &d) const {
    double ready = now;
    if (ch.hasMx)
      ready = ch.mx[2] > o.t ? ch.mx[2] : o.t;
    forEachBit(d.waits, [&](int s) {
      if (ch.semTime[s] > ready)
        ready = ch.semTime[s];
    });
    return now < ready ? now : ready;
  }

  void matrixNop(ChipState &ch, const Op &o, const Dec &d) {
    double streamEnd = ch.hasMx ? ch.mx[0] : -1.0;
    double shadowFree = ch.hasMx ? ch.mx[1] : -1.0;
    double ready = matrixReady(ch, o, d) + cfg.nop;
    ch.mx[0] = streamEnd;
    ch.mx[1] = shadowFree;
    ch.mx[2] = ready;
    ch.hasMx = true;
  }

  double matmulTime(ChipState &ch, const Op &o, const Dec &d) {
    double stream = d.cost;
    if (!cfg.overlap)
      return cfg.weightLoad + stream + cfg.fillDrain;
    double streamEnd = ch.hasMx ? ch.mx[0] : -1.0;
    double shadowFree = ch.hasMx ? ch.mx[1] : -1.0;
    double ready = matrixReady(ch, o, d);
    double loaded = (shadowFree > ready ? shadowFree : ready) + cfg.weightLoad;
    double start = streamEnd > loaded ? streamEnd : loaded;
    double end = start + stream;
    ch.mx[0] = end;
    ch.mx[1] = start;
    ch.mx[2] = ready;
    ch.hasMx = true;
    double dur = end + cfg.fillDrain - now;
    return cfg.nop > dur ? cfg.nop : dur;
  }

  // Shared-bandwidth pool (nova.sim.timing.BandwidthPool) ----------------------
  void startFlow(int c, int qk) {
    ChipState &ch = chips[c];
    const Dec &d = ch.decs[ch.queues[qk].pending.front().dec];
    Flow f;
    f.remaining = d.nbytes;
    f.rate = 0.0;
    f.t0 = now;
    f.version = 0;
    f.nres = d.nres;
    f.chip = c;
    f.queue = qk;
    for (int i = 0; i < d.nres; ++i) {
      f.res[i] = d.res[i];
      f.w[i] = d.w[i];
    }
    int id = (int)flows.size();
    flows.push_back(f);
    std::vector<int> affected{id};
    for (int i = 0; i < d.nres; ++i) {
      int r = d.res[i];
      std::vector<int> &s = on[r];
      if (s.empty())
        since[r] = now;
      addAll(affected, s);
      s.push_back(id);
      if (!hasBytes[r]) {
        hasBytes[r] = 1;
        bytesOrder.push_back(r);
      }
      bytes[r] = bytes[r] + d.nbytes * d.w[i];
    }
    rerate(affected);
  }

  static void addAll(std::vector<int> &into, const std::vector<int> &from) {
    for (int x : from) {
      bool present = false;
      for (int y : into)
        if (y == x) {
          present = true;
          break;
        }
      if (!present)
        into.push_back(x);
    }
  }

  void rerate(const std::vector<int> &affected) {
    for (int id : affected) {
      Flow &f = flows[id];
      if (f.version < 0)
        continue;
      f.remaining -= f.rate * (now - f.t0);
      f.t0 = now;
      double rate = std::numeric_limits<double>::infinity();
      for (int i = 0; i < f.nres; ++i) {
        int r = f.res[i];
        double x = bw[r] / ((double)on[r].size() * f.w[i]);
        if (x < rate)
          rate = x;
      }
      f.rate = rate;
      f.version += 1;
      double eta;
      if (rate != std::numeric_limits<double>::infinity()) {
        double rem = 0.0 > f.remaining ? 0.0 : f.remaining;
        eta = now + rem / rate;
      } else {
        eta = now + 0.0;
      }
      schedule(eta, FINISH, id, 0, f.version);
    }
  }

  void finishFlow(int id, int64_t version) {
    Flow &f = flows[id];
    if (version != f.version)
      return;
    f.version = -1;
    std::vector<int> affected;
    for (int i = 0; i < f.nres; ++i) {
      int r = f.res[i];
      std::vector<int> &s = on[r];
      for (size_t j = 0; j < s.size(); ++j)
        if (s[j] == id) {
          s.erase(s.begin() + j);
          break;
        }
      if (s.empty()) {
        if (!hasBusy[r]) {
          hasBusy[r] = 1;
          busyOrder.push_back(r);
        }
        busy[r] = busy[r] + now - since[r];
      }
      addAll(affected, s);
    }
    rerate(affected);
    int c = f.chip, qk = f.queue;
    complete(c, qk);
  }

  // The loop (Machine.run) -------------------------------------------------------
  bool run() {
    for (size_t c = 0; c < chips.size(); ++c)
      schedule(0.0, RESUME, (int)c);
    while (!heap.empty()) {
      Event e = heap.top();
      heap.pop();
      if (e.t > cfg.tMax)
        return false;
      now = e.t;
      switch (e.type) {
      case RESUME:
        chips[e.a].block = B_NONE;
        runStream(e.a);
        break;
      case WAKE:
        chips[e.a].queues[e.b].wake = false;
        tryStart(e.a, e.b);
        break;
      case COMPLETE:
        complete(e.a, e.b);
        break;
      case DMAFLOW:
        startFlow(e.a, e.b);
        break;
      default:
        finishFlow(e.a, e.v);
      }
      if (bail)
        return false;
      events += 1;
    }
    for (const ChipState &ch : chips) {
      if (!ch.halted)
        return false;
      for (const QueueState &q : ch.queues)
        if (!q.pending.empty())
          return false;
    }
    return true;
  }
};

// Python glue ---------------------------------------------------------------------

/// A contiguous buffer of ``count`` items of ``itemsize`` bytes, or an error.
bool viewOf(PyObject *obj, Py_ssize_t itemsize, Py_buffer *view, const char *what) {
  if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
    return false;
  if (view->len % itemsize) {
    PyBuffer_Release(view);
    PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of items", what, view->len);
    return false;
  }
  return true;
}

constexpr int kDecColumns = 7 + 2 * kMaxRes; // see fast_timing.DEC_COLUMNS

/// run(config, bandwidths, chips[, record_order]) -> results or None.
/// config: (cycle, t_max, nop, weight_load, fill_drain, depth, max_instructions, overlap)
/// record_order: the results end with the starts' (chip, step) pairs (int64 bytes).
/// chips: [(steps int64[n,4], decs float64[m,kDecColumns], waits/signals uint64[m,2], npc, nqueues
///          [, step layers int64[n]])]: with step layers, each chip's results end
///          with its busy ns per (decoded row, layer) (float64[m, layers] bytes).
PyObject *runLoop(PyObject *, PyObject *args) {
  PyObject *config, *bandwidths, *chipList;
  int recordOrder = 0;
  if (!PyArg_ParseTuple(args, "OOO|p", &config, &bandwidths, &chipList, &recordOrder))
    return nullptr;
  Machine m;
  m.recordOrder = recordOrder != 0;
  if (!PyArg_ParseTuple(config, "dddddLLp", &m.cfg.cycle, &m.cfg.tMax, &m.cfg.nop, &m.cfg.weightLoad,
                        &m.cfg.fillDrain, &m.cfg.depth, &m.cfg.maxInstructions, &m.cfg.overlap))
    return nullptr;
  Py_buffer bwv;
  if (!viewOf(bandwidths, sizeof(double), &bwv, "bandwidths"))
    return nullptr;
  size_t nres = bwv.len / sizeof(double);
  m.bw.assign((double *)bwv.buf, (double *)bwv.buf + nres);
  PyBuffer_Release(&bwv);
  m.since.assign(nres, 0.0);
  m.busy.assign(nres, 0.0);
  m.bytes.assign(nres, 0.0);
  m.hasBusy.assign(nres, 0);
  m.hasBytes.assign(nres, 0);
  m.on.resize(nres);

  PyObject *seqList = PySequence_Fast(chipList, "chips must be a sequence");
  if (!seqList)
    return nullptr;
  Py_ssize_t nchips = PySequence_Fast_GET_SIZE(seqList);
  m.chips.resize(nchips);
  for (Py_ssize_t c = 0; c < nchips; ++c) {
    PyObject *item = PySequence_Fast_GET_ITEM(seqList, c);
    PyObject *steps, *decs, *masks, *layers = nullptr;
    int npc, nqueues;
    if (!PyArg_ParseTuple(item, "OOOii|O", &steps, &decs, &masks, &npc, &nqueues, &layers)) {
      Py_DECREF(seqList);
      return nullptr;
    }
    ChipState &ch = m.chips[c];
    Py_buffer sv, dv, mv;
    if (!viewOf(steps, 4 * sizeof(int64_t), &sv, "steps")) {
      Py_DECREF(seqList);
      return nullptr;
    }
    const int64_t *s = (const int64_t *)sv.buf;
    size_t nsteps = sv.len / (4 * sizeof(int64_t));
    ch.steps.resize(nsteps);
    for (size_t i = 0; i < nsteps; ++i)
      ch.steps[i] = Step{s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]};
    PyBuffer_Release(&sv);
    if (!viewOf(decs, kDecColumns * sizeof(double), &dv, "decs")) {
      Py_DECREF(seqList);
      return nullptr;
    }
    if (!viewOf(masks, 2 * sizeof(uint64_t), &mv, "masks")) {
      PyBuffer_Release(&dv);
      Py_DECREF(seqList);
      return nullptr;
    }
    size_t ndec = dv.len / (kDecColumns * sizeof(double));
    const double *dd = (const double *)dv.buf;
    const uint64_t *mm = (const uint64_t *)mv.buf;
    ch.decs.resize(ndec);
    for (size_t i = 0; i < ndec; ++i) {
      const double *r = dd + kDecColumns * i;
      Dec &d = ch.decs[i];
      d.qkey = (int)r[0];
      d.cls = (int)r[1];
      d.pc = (int)r[2];
      d.cost = r[3];
      d.setup = r[4];
      d.nbytes = r[5];
      d.nres = (int)r[6];
      for (int j = 0; j < kMaxRes; ++j) {
        d.res[j] = (int)r[7 + j];
        d.w[j] = r[7 + kMaxRes + j];
      }
      d.waits = mm[2 * i];
      d.signals = mm[2 * i + 1];
    }
    PyBuffer_Release(&dv);
    PyBuffer_Release(&mv);
    ch.npc = npc;
    ch.queues.resize(nqueues);
    ch.pcBusy.assign(npc, 0.0);
    ch.pcCount.assign(npc, 0);
    if (layers && layers != Py_None) {
      Py_buffer lv;
      if (!viewOf(layers, sizeof(int64_t), &lv, "step layers")) {
        Py_DECREF(seqList);
        return nullptr;
      }
      const int64_t *l = (const int64_t *)lv.buf;
      size_t n = lv.len / sizeof(int64_t);
      if (n != nsteps) {
        PyBuffer_Release(&lv);
        Py_DECREF(seqList);
        PyErr_SetString(PyExc_ValueError, "step layers: one per step");
        return nullptr;
      }
      ch.stepLayer.assign(l, l + n);
      PyBuffer_Release(&lv);
      for (int64_t x : ch.stepLayer)
        if (x + 1 > ch.numLayers)
          ch.numLayers = x + 1;
      if (ch.numLayers == 0)
        ch.stepLayer.clear();
      ch.layerBusy.assign(ndec * ch.numLayers, 0.0);
    }
  }
  Py_DECREF(seqList);

  bool ok;
  Py_BEGIN_ALLOW_THREADS ok = m.run();
  Py_END_ALLOW_THREADS if (!ok) Py_RETURN_NONE;

  // Results: (now, events, busy[(r, ns)], bytes[(r, b)], chips[...]).
  PyObject *chipsOut = PyList_New(nchips);
  for (Py_ssize_t c = 0; c < nchips; ++c) {
    ChipState &ch = m.chips[c];
    PyObject *qs = PyList_New(ch.queues.size());
    for (size_t k = 0; k < ch.queues.size(); ++k)
      PyList_SET_ITEM(qs, k, Py_BuildValue("(dL)", ch.queues[k].busy, (long long)ch.queues[k].count));
    PyObject *sems = PyList_New(kNumSems), *semTime = PyList_New(kNumSems);
    for (int s = 0; s < kNumSems; ++s) {
      PyList_SET_ITEM(sems, s, PyLong_FromLongLong(ch.sems[s]));
      PyList_SET_ITEM(semTime, s, PyFloat_FromDouble(ch.semTime[s]));
    }
    PyObject *busy = PyBytes_FromStringAndSize((const char *)ch.pcBusy.data(), ch.npc * sizeof(double));
    PyObject *count = PyBytes_FromStringAndSize((const char *)ch.pcCount.data(), ch.npc * sizeof(int64_t));
    PyObject *mx = ch.hasMx ? Py_BuildValue("(ddd)", ch.mx[0], ch.mx[1], ch.mx[2]) : (Py_INCREF(Py_None), Py_None);
    PyObject *chip;
    if (ch.stepLayer.empty()) {
      chip = Py_BuildValue("(ddLLNNNNNN)", ch.t, ch.tEnd, (long long)ch.scalarCount,
                           (long long)ch.executed, qs, sems, semTime, mx, busy, count);
    } else {
      PyObject *layerBusy = PyBytes_FromStringAndSize((const char *)ch.layerBusy.data(),
                                                      ch.layerBusy.size() * sizeof(double));
      chip = Py_BuildValue("(ddLLNNNNNNN)", ch.t, ch.tEnd, (long long)ch.scalarCount,
                           (long long)ch.executed, qs, sems, semTime, mx, busy, count, layerBusy);
    }
    PyList_SET_ITEM(chipsOut, c, chip);
  }
  PyObject *busy = PyList_New(m.busyOrder.size());
  for (size_t i = 0; i < m.busyOrder.size(); ++i)
    PyList_SET_ITEM(busy, i, Py_BuildValue("(id)", m.busyOrder[i], m.busy[m.busyOrder[i]]));
  PyObject *bytes = PyList_New(m.bytesOrder.size());
  for (size_t i = 0; i < m.bytesOrder.size(); ++i)
    PyList_SET_ITEM(bytes, i, Py_BuildValue("(id)", m.bytesOrder[i], m.bytes[m.bytesOrder[i]]));
  if (m.recordOrder) {
    PyObject *order = PyBytes_FromStringAndSize((const char *)m.order.data(), m.order.size() * sizeof(int64_t));
    return Py_BuildValue("(dLNNNN)", m.now, (long long)m.events, busy, bytes, chipsOut, order);
  }
  return Py_BuildValue("(dLNNN)", m.now, (long long)m.events, busy, bytes, chipsOut);
}

PyMethodDef methods[] = {
    {"run", runLoop, METH_VARARGS,
     "Runs a timing-only machine; returns its results, or None where the Python loop must run."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef moduleDef = {PyModuleDef_HEAD_INIT, "_fast_timing",
                         "The simulator's timing-only event loop, compiled (nova/sim/fast_timing.py).", -1,
                         methods};

} // namespace

PyMODINIT_FUNC PyInit__fast_timing(void) { return PyModule_Create(&moduleDef); }
