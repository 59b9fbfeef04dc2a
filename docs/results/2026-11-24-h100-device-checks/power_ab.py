"""tg loops of one tree for ~N s while a thread samples NVML's SM clock and power: does the kernel run
at the same clocks as another tree's? Usage: PYTHONPATH=<tree> python power_ab.py LABEL SECONDS"""
import statistics, sys, threading, time
import torch, pynvml
from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights

label, seconds = sys.argv[1], float(sys.argv[2])
c = ModelConfig.qwen3_5_0_8b()
t = load_tier("megakernel", c, perturb_norms(random_weights(c, seed=0, dtype=torch.bfloat16)), device="cuda")
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
samples, stop = [], threading.Event()
def sample():
    while not stop.is_set():
        samples.append((pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM), pynvml.nvmlDeviceGetPowerUsage(h) / 1000))
        time.sleep(0.01)
tokens, elapsed = 0, 0.0
th = threading.Thread(target=sample); started = False
end = time.time() + seconds
while time.time() < end:
    s = t.new_state(max_seq_len=600)
    ids = t.prefill(torch.randint(1, c.vocab_size, (1, 64), generator=torch.Generator().manual_seed(tokens)), s).argmax(-1).cuda()
    torch.cuda.synchronize()
    if not started: th.start(); started = True
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(512): ids = t.decode_argmax(ids, s)
    e1.record(); e1.synchronize()
    elapsed += e0.elapsed_time(e1) / 1000; tokens += 512
stop.set(); th.join()
clk = [a for a, _ in samples]; pw = [b for _, b in samples]
print(f"{label}: {tokens / elapsed:.1f} tok/s over {tokens} tokens; SM clock median {statistics.median(clk)} MHz "
      f"(min {min(clk)}, max {max(clk)}); power median {statistics.median(pw):.0f} W (max {max(pw):.0f})")
