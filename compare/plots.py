"""The per-part chart of `compare bench --layers --png PATH`: a roofline of one decode step.

Top: each part of the step (embed, every layer, norm, lm_head) along x, its time per tier as a
line of markers on a log axis, the part's byte floor (what it must move ÷ the copy bandwidth) as
a black step line, the layers' kinds as coloured bands; a 3 µs megakernel layer and a 3 ms eager
one are both readable. Bottom: each tier's whole step as a bar on the same kind of axis, the
step's floor as a line."""

from __future__ import annotations

KIND_COLOURS = {"embed": "#8c8c8c", "DeltaNet": "#4c72b0", "attention": "#dd8452", "norm": "#55a868",
                "lm_head": "#c44e52", "other": "#937860"}
TIER_MARKERS = "osD^vP*X"


def part_roofline(path: str, times: dict[str, dict[str, float]], floor_us: dict[str, float] | None,
                  kinds: dict[str, str], title: str):
    """times {tier: {part: µs, "total": µs}}; floor_us {part: µs, "total": µs} or None (no GPU: no
    copy bandwidth, no floor drawn); kinds {part: kind}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    tiers = list(times)
    names = list(dict.fromkeys(p for t in tiers for p in times[t] if p != "total"))
    fig, (ax, axt) = plt.subplots(2, 1, figsize=(max(7.0, 0.32 * len(names) + 3), 6.5),
                                  gridspec_kw={"height_ratios": [3, 1.2]})
    for x, part in enumerate(names):  # the kinds as bands behind the lines
        ax.axvspan(x - 0.5, x + 0.5, color=KIND_COLOURS.get(kinds.get(part, "other")), alpha=0.12, linewidth=0)
    for i, tier in enumerate(tiers):
        xs = [x for x, p in enumerate(names) if times[tier].get(p)]
        ax.plot(xs, [times[tier][names[x]] for x in xs], marker=TIER_MARKERS[i % len(TIER_MARKERS)], markersize=4,
                linewidth=1, label=tier)
    if floor_us is not None:
        ax.step(range(len(names)), [floor_us.get(p, float("nan")) for p in names], where="mid", color="black",
                linewidth=1.2, label="byte floor")
    ax.set_yscale("log")
    lowest = min(v for t in tiers for k, v in times[t].items() if k != "total" and v)
    ax.set_ylim(bottom=lowest / 3)  # (the floor of an embedding row or a norm is nanoseconds: off the chart)
    ax.set_xticks(range(len(names)), [p.replace("layers.", "L") for p in names], rotation=90, fontsize=7)
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_ylabel("µs per decode step (log)")
    ax.set_title(title, fontsize=9)
    used = [k for k in KIND_COLOURS if k in {kinds.get(p, "other") for p in names}]
    tier_legend = ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="tier", title_fontsize=7)
    ax.add_artist(tier_legend)
    ax.legend(handles=[Patch(color=KIND_COLOURS[k], alpha=0.3, label=k) for k in used], fontsize=7, loc="lower left",
              bbox_to_anchor=(1.0, 0.0), title="part", title_fontsize=7)
    totals = [times[t].get("total") or sum(v for k, v in times[t].items() if k != "total") for t in tiers]
    axt.barh(range(len(tiers)), totals, color=[f"C{i}" for i in range(len(tiers))])
    for y, total in enumerate(totals):
        share = f" ({100 * floor_us['total'] / total:.0f}% of floor)" if floor_us is not None else ""
        axt.text(total, y, f" {total:,.0f} µs{share}", va="center", fontsize=7)
    if floor_us is not None:
        axt.axvline(floor_us["total"], color="black", linewidth=1.2)
    axt.set_xscale("log")
    axt.set_yticks(range(len(tiers)), tiers, fontsize=8)
    axt.invert_yaxis()
    axt.set_xlabel("µs per decode step, whole step (log)" + ("; line: the step's byte floor" if floor_us else ""))
    axt.set_xlim(min(totals + ([floor_us["total"]] if floor_us else [])) / 2, max(totals) * 8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def delta_rule_chart(path: str, rows: list[dict], rules: list[str], title: str):
    """`compare delta-rule --png PATH`: µs per layer against the prompt length (log-log), a line per
    (rule, decays) of the fresh-state rows, each point of a rule after the first labelled with its
    speed against the first; a second panel: the output error of each rule at each length."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, axe) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    run = [r for r in rows if "us" in r and r["state"] == "fresh"]
    for i, rule in enumerate(rules):
        for gates, style in (("model", "-"), ("slow", "--")):
            pts = sorted((r["T"], r) for r in run if r["rule"] == rule and r["gates"] == gates)
            if not pts:
                continue
            xs, ys = [t for t, _ in pts], [r["us"] for _, r in pts]
            ax.plot(xs, ys, style, marker=TIER_MARKERS[i % len(TIER_MARKERS)], color=f"C{i}", label=f"{rule}, {gates} decays")
            if i and gates == "model":
                for x, (_, r) in zip(xs, pts):
                    if r.get("vs_first") is None:  # (the first rule did not run at this length)
                        continue
                    ax.annotate(f"{r['vs_first']:.2f}x", (x, r["us"]), textcoords="offset points", xytext=(0, -12),
                                ha="center", fontsize=7, color=f"C{i}")
            errs = [r["err_o"] for _, r in pts]
            axe.plot(xs, errs, style, marker=TIER_MARKERS[i % len(TIER_MARKERS)], color=f"C{i}", label=f"{rule}, {gates}")
    for a in (ax, axe):
        a.set_xscale("log", base=2)
        a.set_xlabel("prompt tokens")
        a.grid(True, which="both", alpha=0.3)
    ax.set_yscale("log")
    ax.set_ylabel("µs per DeltaNet layer (log)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    axe.set_ylabel("output error vs fp32 (relative)")
    axe.set_ylim(bottom=0)
    axe.set_title("error of each rule (fresh state)", fontsize=9)
    axe.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
