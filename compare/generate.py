"""`python -m compare generate`: stream text from a checkpoint with one tier.

With `--checkpoint` the prompt is encoded by the checkpoint's own tokenizer (`--chat`
wraps it in its chat template as a user turn with the generation prompt), each new
token's text is printed as it arrives, and generation stops at the checkpoint's EOS ids
(config.json and generation_config.json) or after `--max-new-tokens`. Without one the
built-in config runs on seeded random weights, which generate noise: token ids in
(`--prompt-ids` or random), token ids out. Greedy unless `--temperature` > 0. Text goes
to stdout; notes and the speed report go to stderr. Greedy decoding streams each token as it
is produced and the device never waits for the printing (timing.greedy_tokens): the megakernel
runs every step in ONE launch (`decode_greedy`, each token landing in pinned host memory as its
step ends, the launch ending at the EOS); the other tiers use their fused argmax and queue each
step before the previous token is read (at the cost of one step past an EOS). `--temperature`
alone draws each token with reference/sampling.py (the Gumbel-max draw every tier makes from its
logits, keyed by the seed, the row and the position: a seed gives the same text on every tier; the
megakernel draws on the device, in the same one launch, `decode_sample`); with `--top-k` or
`--top-p` the host sampler draws (compare/sampling.py), one decode a step.

`--num-return-sequences N` decodes N samples of the prompt together in one batch state
(the prompt prefilled into every row at once), each row sampled with its own generator
(seed `--seed` + k for row k, so row 0 draws what a single sequence draws), each stopping
at EOS or `--max-new-tokens` (a finished row keeps stepping with the batch; what it
would produce is discarded). Each sequence is printed whole, tagged `[k]`, as it finishes.
"""

from __future__ import annotations

import os
import sys
import time

import torch

from reference import CheckpointError, ModelConfig, load_checkpoint, random_weights
from reference.checkpoint import resolve_checkpoint_dir
from reference.config import is_count, read_json_object
from reference.sampling import sample

from .common import UsageError, add_nonfinite_argument, pick_device
from .progress import Progress
from .sampling import choose
from .timing import greedy_tokens, launch_greedy
from .tiers import TIERS, load_tier, unavailable_reason

DEFAULT_TIER_ORDER = ("megakernel", "triton", "reference")  # on a GPU, the first this machine runs
RANDOM_PROMPT_LEN = 8
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")  # a tokenizer's vocabulary is in one of them


def add_arguments(parser):
    parser.add_argument("--checkpoint", metavar="DIR_OR_HUB_ID", help="a Hugging Face folder (or hub id) with a tokenizer")
    add_nonfinite_argument(parser)
    parser.add_argument("--config", choices=list(ModelConfig.built_in()), default=None,
                        help="built-in config without a checkpoint (default: qwen3.5-0.8b on a GPU, tiny on a CPU)")
    parser.add_argument("--tier", default=None,
                        help=f"one of {', '.join(TIERS)} (default: reference on a CPU, on a GPU the first of "
                             f"{', '.join(DEFAULT_TIER_ORDER)} this machine runs)")
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--prompt", help="prompt text (needs --checkpoint)")
    parser.add_argument("--prompt-ids", help="prompt as comma-separated token ids, e.g. 1,2,3")
    parser.add_argument("--chat", action="store_true", help="wrap the prompt in the tokenizer's chat template")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="(default: %(default)s)")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 is greedy (default: %(default)s)")
    parser.add_argument("--top-k", type=int, default=0, help="sample among the k likeliest; 0 keeps all")
    parser.add_argument("--top-p", type=float, default=1.0, help="sample within this probability mass; 1 keeps all")
    parser.add_argument("--seed", type=int, default=0, help="seed of sampling, random weights and random prompt")
    parser.add_argument("--num-return-sequences", "-n", type=int, default=1, metavar="N",
                        help="sample N sequences of the prompt together in one batch (row k sampled with seed "
                             "--seed + k); each is printed, tagged [k], when it finishes (default: %(default)s)")


def check_arguments(args):
    if args.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens {args.max_new_tokens}: expected at least 1")
    if args.num_return_sequences < 1:
        raise UsageError(f"--num-return-sequences {args.num_return_sequences}: expected at least 1")
    if args.temperature < 0:
        raise UsageError(f"--temperature {args.temperature}: expected 0 (greedy) or more")
    if args.top_k < 0:
        raise UsageError(f"--top-k {args.top_k}: expected 0 (all) or more")
    if not 0 < args.top_p <= 1:
        raise UsageError(f"--top-p {args.top_p}: expected a probability mass in (0, 1]")
    if args.prompt is not None and args.prompt_ids is not None:
        raise UsageError("give either --prompt or --prompt-ids, not both")
    if args.prompt is not None and not args.prompt.strip():
        raise UsageError("--prompt is empty; expected some text")
    if args.prompt is not None and not args.checkpoint:
        raise UsageError("--prompt needs --checkpoint (its tokenizer); without one use --prompt-ids")
    if args.chat and args.prompt is None:
        raise UsageError("--chat needs --prompt TEXT")
    if args.checkpoint and args.prompt is None and args.prompt_ids is None:
        raise UsageError("with --checkpoint, expected --prompt TEXT or --prompt-ids")


def parse_ids(text: str) -> list[int]:
    try:
        ids = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--prompt-ids {text!r}: expected comma-separated token ids such as 1,2,3") from None
    if not ids:
        raise UsageError("--prompt-ids is empty; expected at least one token id")
    return ids


def choose_tier(name, device) -> str:
    if name is None:
        if device.type != "cuda":
            return "reference"  # triton on a CPU is the interpreter: a test harness, not a generator
        for candidate in DEFAULT_TIER_ORDER:
            if unavailable_reason(candidate, device) is None:
                return candidate
        raise UsageError(f"none of the tiers {list(DEFAULT_TIER_ORDER)} can run on {device}")
    if name not in TIERS:
        raise UsageError(f"unknown tier {name!r}; expected one of {list(TIERS)}")
    reason = unavailable_reason(name, device)
    if reason is not None:
        raise UsageError(f"tier {name!r} cannot run on {device}: {reason}")
    return name


def load_tokenizer(folder: str):
    """The checkpoint's tokenizer. A folder without one is an error: transformers would
    otherwise build an empty tokenizer from config.json alone."""
    from transformers import AutoTokenizer

    if not any(os.path.isfile(os.path.join(folder, f)) for f in TOKENIZER_FILES):
        raise CheckpointError(f"{folder} has no tokenizer: none of {', '.join(TOKENIZER_FILES)} is there "
                              "(generate encodes the prompt and decodes the output with the checkpoint's tokenizer)")
    try:
        return AutoTokenizer.from_pretrained(folder)
    except Exception as e:  # no tokenizer files, or ones transformers cannot read
        raise CheckpointError(f"{folder}: no tokenizer could be loaded ({type(e).__name__}: {e})") from e


def eos_ids(config, folder: str) -> set[int]:
    """The checkpoint's EOS ids: config.json's, plus generation_config.json's if present."""
    ids = set(config.eos_token_ids)
    path = os.path.join(folder, "generation_config.json")
    if os.path.isfile(path):
        eos = read_json_object(path, CheckpointError).get("eos_token_id")
        if not (eos is None or is_count(eos) or
                isinstance(eos, list) and all(is_count(e) for e in eos)):
            raise CheckpointError(f"{path}: eos_token_id is {eos!r}; expected a token id or a list of them")
        ids.update(eos if isinstance(eos, list) else [] if eos is None else [eos])
    return ids


def encode(tokenizer, prompt: str, chat: bool) -> list[int]:
    if chat:
        if not getattr(tokenizer, "chat_template", None):
            raise UsageError("--chat: the checkpoint's tokenizer has no chat template")
        text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                             add_generation_prompt=True)
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer(prompt)["input_ids"]


class TextStream:
    """Prints the text of each new token as it arrives. The whole continuation is decoded
    again each time and only the new suffix is printed, so characters spanning tokens come
    out whole (a suffix ending in an incomplete character waits for the next token)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.ids, self.printed = tokenizer, [], 0

    def push(self, token: int):
        self.ids.append(token)
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            return
        sys.stdout.write(text[self.printed:])
        sys.stdout.flush()
        self.printed = len(text)

    def end(self):
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        sys.stdout.write(text[self.printed:] + "\n")
        sys.stdout.flush()


class SequenceText:
    """The text of one finished sequence of `--num-return-sequences`, decoded whole."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def render(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)


class SequenceIds:
    """The token ids of one finished sequence, space-separated."""

    def render(self, ids: list[int]) -> str:
        return " ".join(map(str, ids))


class IdStream:
    """Prints each new token id as it arrives, space-separated."""

    def __init__(self):
        self.first = True

    def push(self, token: int):
        sys.stdout.write(("" if self.first else " ") + str(token))
        sys.stdout.flush()
        self.first = False

    def end(self):
        sys.stdout.write("\n")
        sys.stdout.flush()


def note(text: str):
    print(text, file=sys.stderr, flush=True)


def run(args) -> int:
    check_arguments(args)
    prompt_ids = parse_ids(args.prompt_ids) if args.prompt_ids is not None else None
    device = pick_device(args.device)
    tier_name = choose_tier(args.tier, device)
    if args.checkpoint:
        folder = resolve_checkpoint_dir(args.checkpoint)
        tokenizer = load_tokenizer(folder)
        config, weights = load_checkpoint(folder, dtype=torch.bfloat16, allow_nonfinite=args.allow_nonfinite_weights)
        stop = eos_ids(config, folder)
        ids = encode(tokenizer, args.prompt, args.chat) if args.prompt is not None else prompt_ids
        if not ids:
            raise UsageError("the prompt encodes to no tokens; expected some text")
        stream = TextStream(tokenizer)
        whole = SequenceText(tokenizer)
    else:
        config = ModelConfig.named(args.config or ("qwen3.5-0.8b" if device.type == "cuda" else "tiny"))
        note(f"no --checkpoint: config {config.name} with seeded random weights (seed {args.seed}), which generate "
             "noise; printing token ids")
        weights = random_weights(config, seed=args.seed, dtype=torch.bfloat16)
        stop = set()
        if prompt_ids is not None:
            ids = prompt_ids
        else:
            gen = torch.Generator().manual_seed(args.seed)
            ids = torch.randint(1, config.vocab_size, (RANDOM_PROMPT_LEN,), generator=gen).tolist()
            note(f"random prompt ids: {','.join(map(str, ids))}")
        stream = IdStream()
        whole = SequenceIds()

    tier = load_tier(tier_name, config, weights, device=device, dtype=torch.bfloat16)
    if args.num_return_sequences > 1:
        return generate_many(tier, ids, stop, whole, args, device)
    state = tier.new_state(1, len(ids) + args.max_new_tokens)
    gen = torch.Generator().manual_seed(args.seed)
    pick = lambda logits: choose(logits[0], args.temperature, args.top_k, args.top_p, gen)  # noqa: E731
    # temperature alone: the draw every tier makes (reference/sampling.py; the megakernel in one
    # launch); with top-k / top-p: the host sampler (compare/sampling.py), a decode a step
    spec_draw = args.temperature > 0 and args.top_k == 0 and args.top_p == 1.0
    seed32 = args.seed & 0xFFFFFFFF
    sampling = "greedy" if args.temperature == 0 else (
        f"temperature {args.temperature}, top-k {args.top_k or 'all'}, top-p {args.top_p}, seed {args.seed}"
        + (" (reference/sampling.py's draw)" if spec_draw else " (the host sampler)"))
    note(f"tier {tier_name} on {device} | {len(ids)} prompt tokens | {sampling}")

    t0 = time.perf_counter()
    logits = tier.prefill(torch.tensor([ids]), state)
    if args.temperature == 0:  # greedy: every token streamed as it is produced (greedy_tokens)
        first = logits.argmax(-1)
        int(first[0])  # (the prompt's time ends with its first token on the host)
        t_prompt = time.perf_counter() - t0
        t0 = time.perf_counter()
        tokens, reason, steps = greedy_tokens(tier, first, state, args.max_new_tokens, stop, stream.push)
        if tier.many_tokens_per_launch:
            ahead = " in one launch" if steps else ""
        else:
            ahead = " (one queued ahead past the EOS)" if reason.startswith("EOS") and tokens else ""
        new = len(tokens)
    elif spec_draw:  # every token streamed as it is drawn (the megakernel: on the device, in one launch)
        first = sample(logits, args.temperature, seed32, [len(ids) - 1])  # (the prompt's last token decoded)
        t_prompt = time.perf_counter() - t0
        t0 = time.perf_counter()
        tokens, reason, steps = launch_greedy(tier, first.to(tier.device), state, args.max_new_tokens, stop, stream.push,
                                              temperature=args.temperature, seed=seed32)
        ahead = " in one launch" if steps and tier.many_tokens_per_launch else ""
        new = len(tokens)
    else:
        token = pick(logits)  # choosing reads the logits: the GPU is done
        t_prompt = time.perf_counter() - t0
        new, steps, reason, ahead = 0, 0, f"--max-new-tokens {args.max_new_tokens}", ""
        t0 = time.perf_counter()
        while True:
            if token in stop:
                reason = f"EOS id {token}"
                break
            stream.push(token)
            new += 1
            if new >= args.max_new_tokens:
                break
            token = pick(tier.decode(torch.tensor([token]), state))
            steps += 1
    t_gen = time.perf_counter() - t0
    stream.end()
    gen_speed = f"{steps / t_gen:,.1f} tok/s" if steps and t_gen > 0 else "n/a"
    note(f"stopped at {reason}\n"
         f"prompt: {len(ids)} tokens in {t_prompt:.3f} s = {len(ids) / t_prompt:,.1f} tok/s\n"
         f"generation: {new} new tokens, {steps} decode steps{ahead} in {t_gen:.3f} s = {gen_speed}"
         " (the first new token comes with the prompt)")
    return 0


def generate_many(tier, ids: list[int], stop: set[int], whole, args, device) -> int:
    """`--num-return-sequences N`: N samples of one prompt decoded together in one batch state.

    The display: each sequence is printed whole, as `[k] text`, the moment it finishes (EOS
    or --max-new-tokens), while a live progress line on stderr (a terminal only) counts the
    steps and the rows still running. N streams written token by token into one terminal
    would chop each other into fragments (a token is a piece of a word), and interleaved
    `[k] token` lines would hold one token a line; whole sequences read as text, stdout stays
    one sequence a line for a pipe, and the progress line shows the batch is alive."""
    n = args.num_return_sequences
    if tier.max_batch is not None and n > tier.max_batch:
        raise UsageError(f"--num-return-sequences {n}: tier {tier.name!r} decodes at most {tier.max_batch} sequences "
                         f"per state; expected 1 to {tier.max_batch}")
    if args.temperature == 0:
        note(f"warning: greedy decoding (--temperature 0) gives {n} identical sequences; pass --temperature > 0 "
             "to sample different ones")
    state = tier.new_state(n, len(ids) + args.max_new_tokens)
    gens = [torch.Generator().manual_seed(args.seed + k) for k in range(n)]
    # temperature alone: row k draws as the single sequence of seed --seed + k does (reference/sampling.py,
    # the row's noise keyed by that seed); with top-k / top-p the host sampler, row k's generator --seed + k
    spec_draw = args.temperature > 0 and args.top_k == 0 and args.top_p == 1.0
    sampling = "greedy" if args.temperature == 0 else (
        f"temperature {args.temperature}, top-k {args.top_k or 'all'}, top-p {args.top_p}, "
        f"seeds {args.seed}..{args.seed + n - 1} (row k: --seed + k)"
        + (" (reference/sampling.py's draw)" if spec_draw else " (the host sampler)"))
    note(f"tier {tier.name} on {device} | {len(ids)} prompt tokens | {n} sequences in one batch | {sampling}")

    progress = Progress(args.max_new_tokens)
    outputs, reasons, order = [[] for _ in range(n)], [None] * n, []

    def finish(k, reason):
        reasons[k] = reason
        order.append(k)
        progress.close()  # clear the progress line before the sequence lands on the same terminal
        text = whole.render(outputs[k]).replace("\n", "\n    ")
        sys.stdout.write(f"[{k}] {text}\n")
        sys.stdout.flush()

    def pick(logits, k, position):  # (position: where the token that gave these logits was decoded)
        if spec_draw:
            return int(sample(logits[k:k + 1], args.temperature, (args.seed + k) & 0xFFFFFFFF, [position])[0])
        return choose(logits[k], args.temperature, args.top_k, args.top_p, gens[k])

    t0 = time.perf_counter()
    logits = tier.prefill(torch.tensor([ids] * n), state)  # every row the same prompt, one prefill
    tokens = [pick(logits, k, len(ids) - 1) for k in range(n)]  # choosing reads the logits: the device is done
    t_prompt = time.perf_counter() - t0
    steps = 0
    t0 = time.perf_counter()
    while True:
        for k in range(n):
            if reasons[k] is not None:
                continue
            if tokens[k] in stop:
                finish(k, f"EOS id {tokens[k]}")
                continue
            outputs[k].append(tokens[k])
            if len(outputs[k]) >= args.max_new_tokens:
                finish(k, f"--max-new-tokens {args.max_new_tokens}")
        running = sum(r is None for r in reasons)
        if not running:
            break
        progress.step(f"{running} of {n} sequences running")
        # a finished row is fed its last token again: it steps with the batch, its output is discarded
        positions = list(state.positions)
        logits = tier.decode(torch.tensor(tokens), state)
        steps += 1
        tokens = [pick(logits, k, positions[k]) if reasons[k] is None else tokens[k] for k in range(n)]
    t_gen = time.perf_counter() - t0
    progress.close()
    new = sum(len(o) for o in outputs)
    speed = (f"{n * steps / t_gen:,.1f} tok/s in the batch, {steps / t_gen:,.1f} per sequence"
             if steps and t_gen > 0 else "n/a")
    note("\n".join(f"[{k}] {len(outputs[k])} new tokens, stopped at {reasons[k]}" for k in range(n)) + "\n"
         f"prompt: {len(ids)} tokens × {n} rows in {t_prompt:.3f} s = {n * len(ids) / t_prompt:,.1f} tok/s\n"
         f"generation: {new} new tokens kept in {n} sequences, {steps} decode steps of the batch in {t_gen:.3f} s"
         f" = {speed} (the first new tokens come with the prompt)")
    return 0
