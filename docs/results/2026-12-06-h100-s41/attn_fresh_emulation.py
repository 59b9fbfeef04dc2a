"""Session 41 review of branch s41-attn-fresh (39aa7fe), not a test of the CUDA code: a CPU emulation of attn_fresh_kernel
written from its source (its address expressions copied here: an edit of the kernel is not seen): swizzled smem, ldmatrix(.trans) x4, mma.m16n8k16 fragment maps
(PTX ISA), cp.async groups (data poisoned with NaN from issue until the wait that covers its group),
the online softmax and the gate epilogue, compared with a float64 reference. Usage: python attn_fresh_emulation.py T,r0 [T,r0 ...] (attn_fresh_emulation.log: its run)."""
import sys
import numpy as np
import torch

HQ, HKV, HD, QKV = 8, 2, 256, 5120
ROWS = KEYS = 64
CHUNKS = HD // 8
TILE_BYTES = ROWS * HD * 2
LOG2E = 1.4426950408889634
SCALE_LOG2 = np.float32(np.float32(0.0625) * np.float32(LOG2E))


def bf(x):  # round to bf16 (rn), back to float32
    return torch.from_numpy(np.asarray(x, dtype=np.float32)).bfloat16().float().numpy()


def swz(row, chunk):
    return row * (CHUNKS * 16) + ((chunk ^ (row & 7)) * 16)


class Smem:
    def __init__(self):
        self.m = np.full(3 * TILE_BYTES // 2, np.nan, dtype=np.float32)  # bf16 elements
        self.groups = []  # committed groups: list of lists of (elem offset, values)
        self.open = []

    def load_tile(self, dst, src, row0, rows_valid):  # src: [rows, 256] float (bf16 values)
        for i in range(ROWS * CHUNKS):
            r, c = divmod(i, CHUNKS)
            row = row0 + r
            off = (dst + swz(r, c)) // 2
            vals = src[row, c * 8:c * 8 + 8] if row < rows_valid else np.zeros(8, np.float32)
            self.m[off:off + 8] = np.nan  # in flight: undefined until waited on
            self.open.append((off, vals.copy()))

    def commit(self):
        self.groups.append(self.open)
        self.open = []

    def wait_group(self, n):
        while len(self.groups) > n:
            for off, vals in self.groups.pop(0):
                self.m[off:off + 8] = vals

    def ldsm_x4(self, addrs, trans):  # addrs: byte address per lane (32); returns 4 regs [32][2]
        regs = np.zeros((4, 32, 2), np.float32)
        for i in range(4):
            M = np.stack([self.m[addrs[8 * i + r] // 2: addrs[8 * i + r] // 2 + 8] for r in range(8)])  # [8][8]
            assert all(addrs[8 * i + r] % 16 == 0 for r in range(8))
            for l in range(32):
                if not trans:
                    regs[i, l] = M[l // 4, 2 * (l % 4): 2 * (l % 4) + 2]
                else:
                    regs[i, l] = M[2 * (l % 4): 2 * (l % 4) + 2, l // 4]
            # bank conflicts: the 8 rows' 16-byte chunks must cover all 32 banks once
            banks = sorted(((addrs[8 * i + r] // 4) % 32) for r in range(8))
            assert banks == list(range(0, 32, 4)), ("bank conflict", banks)
        return regs


def mma(c, a, b):  # c [32][4] fp32, a [4][32][2], b [2][32][2] per the PTX m16n8k16 layouts
    A = np.zeros((16, 16), np.float64)
    B = np.zeros((16, 8), np.float64)
    for l in range(32):
        g, t = l // 4, l % 4
        A[g, 2 * t:2 * t + 2] = a[0, l]
        A[g + 8, 2 * t:2 * t + 2] = a[1, l]
        A[g, 2 * t + 8:2 * t + 10] = a[2, l]
        A[g + 8, 2 * t + 8:2 * t + 10] = a[3, l]
        B[2 * t:2 * t + 2, g] = b[0, l]
        B[2 * t + 8:2 * t + 10, g] = b[1, l]
    C = A @ B
    for l in range(32):
        g, t = l // 4, l % 4
        c[l] += np.array([C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1]], np.float32)


def kernel(qbuf, kv, max_seq, proj, out, T, r0):
    grid_x = (T - r0 + ROWS - 1) // ROWS
    kvflat = kv.reshape(2, max_seq, HKV * HD)
    for h in range(HQ):
        for bx in range(grid_x):
            block(qbuf, kvflat, proj, out, T, r0, h, bx, grid_x)


def block(qbuf, kvflat, proj, out, T, r0, h, bx, grid_x):
    sm = Smem()
    Qs, Ks, Vs = 0, TILE_BYTES, 2 * TILE_BYTES
    hk = h // (HQ // HKV)
    q0 = r0 + (grid_x - 1 - bx) * ROWS
    keys = min(q0 + ROWS, T)
    tiles = (keys + KEYS - 1) // KEYS
    Qsrc = qbuf.reshape(qbuf.shape[0], HQ * HD)[:, h * HD:(h + 1) * HD]
    Ksrc = kvflat[0][:, hk * HD:(hk + 1) * HD]
    Vsrc = kvflat[1][:, hk * HD:(hk + 1) * HD]
    sm.load_tile(Qs, Qsrc, q0, T)
    sm.load_tile(Ks, Ksrc, 0, keys)
    sm.commit()
    sm.load_tile(Vs, Vsrc, 0, keys)
    sm.commit()
    lanes = np.arange(32)
    g, t = lanes // 4, lanes % 4
    o = np.zeros((4, HD // 8, 32, 4), np.float32)
    m = np.full((4, 32, 2), -np.inf, np.float32)
    l = np.zeros((4, 32, 2), np.float32)
    s = np.zeros((4, KEYS // 8, 32, 4), np.float32)
    for j in range(tiles):
        sm.wait_group(1)
        for w in range(4):
            s[w] = 0
            for kk in range(HD // 16):
                a = sm.ldsm_x4(Qs + np.array([swz(w * 16 + (ln & 15), kk * 2 + (ln >> 4)) for ln in lanes]), False)
                for n in range(0, KEYS // 8, 2):
                    b = sm.ldsm_x4(Ks + np.array([swz(n * 8 + (ln & 7) + ((ln >> 4) << 3), kk * 2 + ((ln >> 3) & 1)) for ln in lanes]), False)
                    mma(s[w, n], a, b[0:2])
                    mma(s[w, n + 1], a, b[2:4])
        if j + 1 < tiles:
            sm.load_tile(Ks, Ksrc, (j + 1) * KEYS, keys)
        sm.commit()
        for w in range(4):
            row_lo = q0 + w * 16 + g
            mx = m[w].copy()
            for n in range(KEYS // 8):
                for e in range(4):
                    key = j * KEYS + n * 8 + 2 * t + (e & 1)
                    row = row_lo + (e >> 1) * 8
                    ok = (key <= row) & (key < T)
                    s[w, n, :, e] = np.where(ok, s[w, n, :, e] * SCALE_LOG2, -np.inf)
                    mx[:, e >> 1] = np.fmax(mx[:, e >> 1], s[w, n, :, e])
            for r in range(2):
                mx[:, r] = np.fmax(mx[:, r], mx[lanes ^ 1, r])
                mx[:, r] = np.fmax(mx[:, r], mx[lanes ^ 2, r])
                with np.errstate(invalid="ignore"):
                    alpha = np.exp2(m[w, :, r] - mx[:, r])
                m[w, :, r] = mx[:, r]
                l[w, :, r] *= alpha
                o[w, :, :, 2 * r] *= alpha
                o[w, :, :, 2 * r + 1] *= alpha
            for n in range(KEYS // 8):
                for e in range(4):
                    s[w, n, :, e] = np.exp2(s[w, n, :, e] - m[w, :, e >> 1])
                    l[w, :, e >> 1] += s[w, n, :, e]
        sm.wait_group(1)
        for w in range(4):
            for ks in range(KEYS // 16):
                P = bf(s[w])
                a = np.stack([P[2 * ks][:, 0:2], P[2 * ks][:, 2:4], P[2 * ks + 1][:, 0:2], P[2 * ks + 1][:, 2:4]])
                for d in range(0, HD // 8, 2):
                    b = sm.ldsm_x4(Vs + np.array([swz(ks * 16 + (ln & 7) + (((ln >> 3) & 1) << 3), d + (ln >> 4)) for ln in lanes]), True)
                    mma(o[w, d], a, b[0:2])
                    mma(o[w, d + 1], a, b[2:4])
        if j + 1 < tiles:
            sm.load_tile(Vs, Vsrc, (j + 1) * KEYS, keys)
        sm.commit()
    for w in range(4):
        L = l[w].copy()
        for r in range(2):
            L[:, r] += L[lanes ^ 1, r]
            L[:, r] += L[lanes ^ 2, r]
        for ln in range(32):
            for r in range(2):
                row = q0 + w * 16 + ln // 4 + r * 8
                if row >= T:
                    continue
                inv = np.float32(1) / L[ln, r]
                for d in range(HD // 8):
                    c = d * 8 + 2 * (ln % 4)
                    gv = proj[row, h * 2 * HD + HD + c: h * 2 * HD + HD + c + 2]
                    gs = bf(1 / (1 + np.exp(-gv.astype(np.float32))))
                    ov = bf(o[w, d, ln, 2 * r:2 * r + 2] * inv)
                    out[row, h * HD + c: h * HD + c + 2] = bf(ov * gs)


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
    rng = np.random.default_rng(T * 1000 + r0)
    max_seq = T + 5
    q = rng.standard_normal((T, HQ, HD)).astype(np.float32)
    q[::7] *= 4
    q = bf(q)
    kv = np.full((2, max_seq, HKV, HD), np.nan, np.float32)
    kv[:, :T] = bf(rng.standard_normal((2, T, HKV, HD)))
    proj = bf(rng.standard_normal((T, QKV)))
    out = np.full((T, HQ * HD), np.nan, np.float32)
    kernel(q, kv, max_seq, proj, out, T, r0)
    want = reference(q, kv, proj, T, r0)
    got = out[r0:]
    assert np.isfinite(got).all()
    assert np.isnan(out[:r0]).all()
    err = np.abs(got - want).max(axis=1) / np.abs(want).max(axis=1)
    pr = np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1); print(f"row-norm rel max {pr.max():.4g}"); print(f"T={T} r0={r0}: worst per-row max-rel err {err.max():.4g} (row {err.argmax() + r0}), "
          f"global rel {np.linalg.norm(got - want) / np.linalg.norm(want):.3g}")


if __name__ == "__main__":
    for a in sys.argv[1:]:
        T, r0 = map(int, a.split(","))
        main(T, r0)
