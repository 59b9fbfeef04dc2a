"""CPU emulation of attn_fresh_kernel v2 (branch s41-attn-fresh-split, 87fa8e2: 256 threads, two warp groups taking
the key tiles of either parity, a shared-memory hand-off of group 1's m, l, O to group 0), adapted from the v1
emulator (docs/results/2026-12-06-h100-s41/attn_fresh_emulation.py). Address expressions copied from the v2
source (an edit of the kernel is not seen). Modelled:
  * swizzled smem of 5 tiles (Q | K0 V0 | K1 V1), ldmatrix x4 (.trans) and mma.m16n8k16 fragments per the PTX ISA;
  * cp.async per issuing thread: each thread's own open / committed groups, its own wait_group 1; a chunk is
    poisoned (NaN) and flagged in flight from issue until its thread's wait covers its group; any read or
    generic write of an in-flight element asserts;
  * phases between __syncthreads: within a phase, an element written (cp.async issue/completion, hand-off store)
    by one warp and read or written by another asserts (a race);
  * the hand-off as a float view of the same bytes (smem + one tile): a float store kills the bf16 data under
    it (NaN) and a bf16 write kills the float; a float read of a word not last written as a float asserts;
  * the loop as written: j = group + 2 i while j - group < tiles (iteration counts per group asserted equal),
    `has`, loads for j + 2 < tiles, the -inf guard (base), the merge (m = max, weights exp2(m_g - m)).
Usage: python emu2.py [--mut NAME] T,r0 [T,r0 ...]   mutations: swapw (merge weights swapped), noguard (base = mx),
       wait2 (wait_group 2), early (hand-off stores before the loop's last barrier),
       lastload (the prefetches also in the last iteration: still in flight at the hand-off)
"""
import sys
import time
import numpy as np
import torch

HQ, HKV, HD, QKV = 8, 2, 256, 5120
ROWS = KEYS = 64
CHUNKS = HD // 8
TILE_BYTES = ROWS * HD * 2
GROUPS = 2
THREADS = 128 * GROUPS
SMEM_BYTES = (1 + 2 * GROUPS) * TILE_BYTES
LOG2E = 1.4426950408889634
SCALE_LOG2 = np.float32(np.float32(0.0625) * np.float32(LOG2E))
MUT = None
LANES = np.arange(32)


def bf(x):  # round to bf16 (rn), back to float32
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).bfloat16().float().numpy()


def swz(row, chunk):
    return row * (CHUNKS * 16) + ((chunk ^ (row & 7)) * 16)


class Race(AssertionError):
    pass


class Smem:
    NE = SMEM_BYTES // 2  # bf16 elements

    def __init__(self):
        self.m = np.full(self.NE, np.nan, np.float32)          # bf16 view
        self.f = np.full(SMEM_BYTES // 4, np.nan, np.float32)  # float view (hand-off)
        self.fvalid = np.zeros(SMEM_BYTES // 4, bool)          # word last written as a float
        self.inflight = np.zeros(self.NE, bool)
        self.groups = [[] for _ in range(THREADS)]  # per thread: committed groups (lists of (off, vals))
        self.open = [[] for _ in range(THREADS)]
        self.phase = 0
        self.barrier()
        self.max_byte_read_tiles = 0

    # ---- phase bookkeeping (warp ids; -1 none, -2 several)
    def barrier(self):
        self.phase += 1
        self.writer = np.full(self.NE, -1, np.int16)
        self.reader = np.full(self.NE, -1, np.int16)

    def _note(self, idx, warp, write):
        idx = np.asarray(idx).ravel()
        w = self.writer[idx]
        if ((w != -1) & (w != warp)).any():
            raise Race(f"phase {self.phase}: warp {warp} {'writes' if write else 'reads'} elements written by warp(s) "
                       f"{set(w[(w != -1) & (w != warp)].tolist())}, elem {idx[(w != -1) & (w != warp)][0]}")
        if write:
            r = self.reader[idx]
            if ((r != -1) & (r != warp)).any():
                raise Race(f"phase {self.phase}: warp {warp} writes elements read by warp(s) {set(r[(r != -1) & (r != warp)].tolist())}")
            self.writer[idx] = warp
        else:
            r = self.reader[idx]
            self.reader[idx] = np.where((r == -1) | (r == warp), warp, -2)

    # ---- cp.async, per issuing thread
    def load_tile(self, th, dst, src, row0, rows_valid, tid, n):
        for i in range(tid, ROWS * CHUNKS, n):
            r, c = divmod(i, CHUNKS)
            row = row0 + r
            valid = row < rows_valid
            assert (dst + swz(r, c)) % 16 == 0
            off = (dst + swz(r, c)) // 2
            vals = src[row, c * 8:c * 8 + 8] if valid else np.zeros(8, np.float32)
            sl = np.arange(off, off + 8)
            if self.inflight[sl].any():
                raise Race(f"thread {th}: cp.async onto elements still in flight (elem {off})")
            self._note(sl, th // 32, True)
            self.m[sl] = np.nan
            self.f[sl[::2] // 2] = np.nan
            self.fvalid[sl[::2] // 2] = False
            self.inflight[sl] = True
            self.open[th].append((off, np.array(vals, np.float32)))

    def commit(self, th):
        self.groups[th].append(self.open[th])
        self.open[th] = []

    def wait_group(self, th, n):
        while len(self.groups[th]) > n:
            for off, vals in self.groups[th].pop(0):
                sl = np.arange(off, off + 8)
                self._note(sl, th // 32, True)
                self.m[sl] = vals
                self.inflight[sl] = False

    def pending(self):
        return sum(len(x) for g in self.groups for x in g) + sum(len(o) for o in self.open)

    # ---- ldmatrix x4 (a warp's)
    def ldsm_x4(self, warp, addrs, trans):
        addrs = np.asarray(addrs)
        assert (addrs % 16 == 0).all()
        idx = (addrs // 2)[:, None] + np.arange(8)[None, :]  # [32][8]
        if self.inflight[idx].any():
            raise Race(f"warp {warp}: ldmatrix reads elements in flight")
        self._note(idx, warp, False)
        M = self.m[idx]
        for i in range(4):  # bank conflicts: the 8 rows' 16-byte chunks must cover all 32 banks once
            banks = sorted(((addrs[8 * i + r] // 4) % 32) for r in range(8))
            assert banks == list(range(0, 32, 4)), ("bank conflict", banks)
        regs = np.zeros((4, 32, 2), np.float32)
        g, t = LANES // 4, LANES % 4
        for i in range(4):
            Mi = M[8 * i:8 * i + 8]
            if not trans:
                regs[i, :, 0] = Mi[g, 2 * t]
                regs[i, :, 1] = Mi[g, 2 * t + 1]
            else:
                regs[i, :, 0] = Mi[2 * t, g]
                regs[i, :, 1] = Mi[2 * t + 1, g]
        return regs

    # ---- the hand-off floats (byte address base + 4 index)
    def fstore(self, warp, base, index, vals):
        word = (base + 4 * np.asarray(index)) // 4
        el = np.concatenate([2 * word, 2 * word + 1])
        if self.inflight[el].any():
            raise Race(f"warp {warp}: hand-off store onto elements with a cp.async in flight")
        self._note(el, warp, True)
        self.m[el] = np.nan
        self.f[word] = vals
        self.fvalid[word] = True

    def fload(self, warp, base, index):
        word = (base + 4 * np.asarray(index)) // 4
        el = np.concatenate([2 * word, 2 * word + 1])
        if self.inflight[el].any():
            raise Race(f"warp {warp}: hand-off load of elements with a cp.async in flight")
        assert self.fvalid[word].all(), f"warp {warp}: hand-off load of a word not written as a float"
        self._note(el, warp, False)
        return self.f[word].copy()


def mma(c, a, b):  # c [32][4] fp32, a [4][32][2], b [2][32][2] per the PTX m16n8k16 layouts
    A = np.zeros((16, 16), np.float64)
    B = np.zeros((16, 8), np.float64)
    g, t = LANES // 4, LANES % 4
    for k in range(2):
        A[g, 2 * t + k] = a[0, :, k]
        A[g + 8, 2 * t + k] = a[1, :, k]
        A[g, 2 * t + 8 + k] = a[2, :, k]
        A[g + 8, 2 * t + 8 + k] = a[3, :, k]
        B[2 * t + k, g] = b[0, :, k]
        B[2 * t + 8 + k, g] = b[1, :, k]
    C = A @ B
    c += np.stack([C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1]], axis=1).astype(np.float32)


def kernel(qbuf, kv, max_seq, proj, out, T, r0):
    if T <= r0:
        return
    grid_x = (T - r0 + ROWS - 1) // ROWS
    kvflat = kv.reshape(2, max_seq, HKV * HD)
    for h in range(HQ):
        for bx in range(grid_x):
            block(qbuf, kvflat, proj, out, T, r0, h, bx, grid_x)


def block(qbuf, kvflat, proj, out, T, r0, h, bx, grid_x):
    sm = Smem()
    threads = range(THREADS)
    group_of = lambda th: th // 128
    gtid_of = lambda th: th % 128
    Qs = 0
    Ks_of = lambda grp: Qs + (1 + 2 * grp) * TILE_BYTES
    Vs_of = lambda grp: Ks_of(grp) + TILE_BYTES
    hk = h // (HQ // HKV)
    q0 = r0 + (grid_x - 1 - bx) * ROWS
    keys = min(q0 + ROWS, T)
    tiles = (keys + KEYS - 1) // KEYS
    Qsrc = qbuf.reshape(qbuf.shape[0], HQ * HD)[:, h * HD:(h + 1) * HD]
    Ksrc = kvflat[0][:, hk * HD:(hk + 1) * HD]
    Vsrc = kvflat[1][:, hk * HD:(hk + 1) * HD]
    # prologue, per thread
    for th in threads:
        grp, gt = group_of(th), gtid_of(th)
        sm.load_tile(th, Qs, Qsrc, q0, T, th, THREADS)
        if grp < tiles:
            sm.load_tile(th, Ks_of(grp), Ksrc, grp * KEYS, keys, gt, 128)
        sm.commit(th)
        if grp < tiles:
            sm.load_tile(th, Vs_of(grp), Vsrc, grp * KEYS, keys, gt, 128)
        sm.commit(th)
    g, t = LANES // 4, LANES % 4
    NW = THREADS // 32
    o = np.zeros((NW, HD // 8, 32, 4), np.float32)
    m = np.full((NW, 32, 2), -np.inf, np.float32)
    l = np.zeros((NW, 32, 2), np.float32)
    s = np.zeros((NW, KEYS // 8, 32, 4), np.float32)
    # the loop: for (j = group; j - group < tiles; j += 2); iteration counts per group must match (block barriers)
    iters = {grp: len(range(grp, grp + tiles, GROUPS)) for grp in range(GROUPS)}
    assert len(set(iters.values())) == 1, iters
    hand_base = TILE_BYTES
    pre = (lambda j: j + GROUPS < tiles) if MUT != "lastload" else (lambda j: j + GROUPS < tiles + GROUPS)

    def handoff_stores():
        for W in range(4, 8):  # group 1's warps
            gt = (W * 32 + LANES) % 128
            for d in range(HD // 8):
                for e in range(4):
                    sm.fstore(W, hand_base, (d * 4 + e) * 128 + gt, o[W, d, :, e])
            for r in range(2):
                sm.fstore(W, hand_base, (HD // 2 + r) * 128 + gt, m[W, :, r])
                sm.fstore(W, hand_base, (HD // 2 + 2 + r) * 128 + gt, l[W, :, r])

    for it in range(iters[0]):
        jw = [W // 4 + GROUPS * it for W in range(NW)]  # each warp's j (its group's)
        has = [jw[W] < tiles for W in range(NW)]
        for th in threads:
            sm.wait_group(th, 1 if MUT != "wait2" else 2)
        sm.barrier()  # line 111
        for W in range(NW):
            wr = W % 4
            grp = W // 4
            s[W] = 0
            if not has[W]:
                continue
            for kk in range(HD // 16):
                a = sm.ldsm_x4(W, Qs + np.array([swz(wr * 16 + (ln & 15), kk * 2 + (ln >> 4)) for ln in LANES]), False)
                for n in range(0, KEYS // 8, 2):
                    b = sm.ldsm_x4(W, Ks_of(grp) + np.array([swz(n * 8 + (ln & 7) + ((ln >> 4) << 3), kk * 2 + ((ln >> 3) & 1)) for ln in LANES]), False)
                    mma(s[W, n], a, b[0:2])
                    mma(s[W, n + 1], a, b[2:4])
        sm.barrier()  # line 128
        for th in threads:
            grp, gt = group_of(th), gtid_of(th)
            j = jw[th // 32]
            if pre(j):
                sm.load_tile(th, Ks_of(grp), Ksrc, (j + GROUPS) * KEYS, keys, gt, 128)
            sm.commit(th)
        for W in range(NW):
            j = jw[W]
            row_lo = q0 + (W % 4) * 16 + g
            mx = m[W].copy()
            for n in range(KEYS // 8):
                for e in range(4):
                    key = j * KEYS + n * 8 + 2 * t + (e & 1)
                    row = row_lo + (e >> 1) * 8
                    ok = (key <= row) & (key < T)
                    s[W, n, :, e] = np.where(ok, s[W, n, :, e] * SCALE_LOG2, np.float32(-np.inf))
                    mx[:, e >> 1] = np.fmax(mx[:, e >> 1], s[W, n, :, e])
            alpha = np.zeros((32, 2), np.float32)
            for r in range(2):
                mx[:, r] = np.fmax(mx[:, r], mx[LANES ^ 1, r])
                mx[:, r] = np.fmax(mx[:, r], mx[LANES ^ 2, r])
                base = np.where(mx[:, r] == -np.inf, np.float32(0), mx[:, r]) if MUT != "noguard" else mx[:, r].copy()
                with np.errstate(invalid="ignore"):
                    alpha[:, r] = np.exp2(m[W, :, r] - base)
                m[W, :, r] = mx[:, r]
                mx[:, r] = base
                l[W, :, r] *= alpha[:, r]
            for d in range(HD // 8):
                o[W, d, :, 0] *= alpha[:, 0]; o[W, d, :, 1] *= alpha[:, 0]
                o[W, d, :, 2] *= alpha[:, 1]; o[W, d, :, 3] *= alpha[:, 1]
            for n in range(KEYS // 8):
                for e in range(4):
                    with np.errstate(invalid="ignore"):
                        s[W, n, :, e] = np.exp2(s[W, n, :, e] - mx[:, e >> 1])
                    l[W, :, e >> 1] += s[W, n, :, e]
        for th in threads:
            sm.wait_group(th, 1 if MUT != "wait2" else 2)
        sm.barrier()  # line 169
        for W in range(NW):
            if not has[W]:
                continue
            grp = W // 4
            P = bf(s[W])
            for ks in range(KEYS // 16):
                a = np.stack([P[2 * ks][:, 0:2], P[2 * ks][:, 2:4], P[2 * ks + 1][:, 0:2], P[2 * ks + 1][:, 2:4]])
                for d in range(0, HD // 8, 2):
                    b = sm.ldsm_x4(W, Vs_of(grp) + np.array([swz(ks * 16 + (ln & 7) + (((ln >> 3) & 1) << 3), d + (ln >> 4)) for ln in LANES]), True)
                    mma(o[W, d], a, b[0:2])
                    mma(o[W, d + 1], a, b[2:4])
        if MUT == "early" and it == iters[0] - 1:
            handoff_stores()  # (stores in the same phase as the last P V: a race)
        sm.barrier()  # line 183
        for th in threads:
            grp, gt = group_of(th), gtid_of(th)
            j = jw[th // 32]
            if pre(j):
                sm.load_tile(th, Vs_of(grp), Vsrc, (j + GROUPS) * KEYS, keys, gt, 128)
            sm.commit(th)
    # after the loop (no wait: whatever is still in flight stays so)
    for W in range(NW):
        for r in range(2):
            l[W, :, r] += l[W, LANES ^ 1, r]
            l[W, :, r] += l[W, LANES ^ 2, r]
    if MUT != "early":
        handoff_stores()
    sm.barrier()  # line 204
    for W in range(4):  # group 0 merges and writes
        gt = W * 32 + LANES
        a0 = np.zeros((32, 2), np.float32)
        a1 = np.zeros((32, 2), np.float32)
        for r in range(2):
            m1 = sm.fload(W, hand_base, (HD // 2 + r) * 128 + gt)
            l1 = sm.fload(W, hand_base, (HD // 2 + 2 + r) * 128 + gt)
            mm = np.fmax(m[W, :, r], m1)
            a0[:, r] = np.exp2(m[W, :, r] - mm)
            a1[:, r] = np.exp2(m1 - mm)
            l[W, :, r] = l[W, :, r] * a0[:, r] + l1 * a1[:, r]
        if MUT == "swapw":
            a0, a1 = a1, a0
        for d in range(HD // 8):
            for e in range(4):
                o[W, d, :, e] = o[W, d, :, e] * a0[:, e >> 1] + sm.fload(W, hand_base, (d * 4 + e) * 128 + gt) * a1[:, e >> 1]
        for ln in range(32):
            for r in range(2):
                row = q0 + W * 16 + ln // 4 + r * 8
                if row >= T:
                    continue
                inv = np.float32(1) / l[W, ln, r]
                for d in range(HD // 8):
                    c = d * 8 + 2 * (ln % 4)
                    gv = proj[row, h * 2 * HD + HD + c: h * 2 * HD + HD + c + 2]
                    gs = bf(1 / (1 + np.exp(-gv.astype(np.float32))))
                    ov = bf(o[W, d, ln, 2 * r:2 * r + 2] * inv)
                    out[row, h * HD + c: h * HD + c + 2] = bf(ov * gs)
    assert sm.pending() == 0, "cp.async still pending at exit"


def reference(q, kv, proj, T, r0):
    qq = torch.from_numpy(q[r0:]).double().transpose(0, 1)
    kk, vv = (torch.from_numpy(kv[i, :T]).double().repeat_interleave(HQ // HKV, dim=1).transpose(0, 1) for i in (0, 1))
    s = qq @ kk.transpose(1, 2) / HD ** 0.5
    rows = torch.arange(r0, T)[:, None]
    s = s.masked_fill(torch.arange(T)[None, :] > rows, float("-inf"))
    o = (s.softmax(-1) @ vv).transpose(0, 1).bfloat16().double()
    gate = torch.from_numpy(proj[r0:, :HQ * 2 * HD]).reshape(T - r0, HQ, 2, HD)[:, :, 1].double()
    return (o * torch.sigmoid(gate).bfloat16().double()).reshape(T - r0, -1).numpy()


def main(T, r0):
    t0 = time.time()
    rng = np.random.default_rng(T * 1000 + r0)
    max_seq = T + 5
    q = rng.standard_normal((T, HQ, HD)).astype(np.float32)
    q[::7] *= 4
    q = bf(q)
    kv = np.full((2, max_seq, HKV, HD), np.nan, np.float32)
    kv[:, :T] = bf(rng.standard_normal((2, T, HKV, HD)))
    proj = bf(rng.standard_normal((T, QKV)))
    out = np.full((T, HQ * HD), np.nan, np.float32)
    try:
        kernel(q, kv, max_seq, proj, out, T, r0)
    except AssertionError as ex:
        print(f"T={T} r0={r0}: FAIL (assert) {type(ex).__name__}: {ex}", flush=True)
        return False
    want = reference(q, kv, proj, T, r0)
    got = out[r0:]
    finite = bool(np.isfinite(got).all())
    untouched = bool(np.isnan(out[:r0]).all())
    with np.errstate(invalid="ignore"):
        pr = np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1)
        mr = np.abs(got - want).max(axis=1) / np.abs(want).max(axis=1)
    worst = np.nanmax(pr) if np.isfinite(pr).any() else np.nan
    ok = finite and untouched and np.isfinite(pr).all() and pr.max() < 2e-2
    print(f"T={T} r0={r0}: rows finite {finite}, rows<r0 untouched {untouched}, worst per-row norm rel err "
          f"{worst:.4g} (row {int(np.nanargmax(pr)) + r0 if np.isfinite(pr).any() else -1}), worst per-row max rel "
          f"{np.nanmax(mr):.4g}, global rel {np.linalg.norm(np.nan_to_num(got - want)) / np.linalg.norm(want):.3g} "
          f"-> {'PASS' if ok else 'FAIL'} ({time.time() - t0:.0f} s)", flush=True)
    return ok


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--mut":
        MUT = args[1]
        args = args[2:]
        print(f"mutation: {MUT}")
    res = [main(*map(int, a.split(","))) for a in args]
    print("ALL PASS" if all(res) else "SOME FAIL")
