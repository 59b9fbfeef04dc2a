"""The per-layer chart of `compare bench --layers --png PATH`: one stacked bar per tier,
one segment per part (embed, each layer, norm, lm_head), coloured by what the part is."""

from __future__ import annotations

KIND_COLOURS = {"embed": "#8c8c8c", "DeltaNet": "#4c72b0", "attention": "#dd8452", "norm": "#55a868",
                "lm_head": "#c44e52", "other": "#937860"}


def stacked_layer_bars(path: str, times: dict[str, dict[str, float]], kinds: dict[str, str], title: str):
    """times {tier: {part: µs}}, kinds {part: kind}; a "total" entry labels the bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    tiers = list(times)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(tiers) + 2), 5))
    for x, tier in enumerate(tiers):
        bottom = 0.0
        for part, us in times[tier].items():
            if part == "total":
                continue
            ax.bar(x, us, bottom=bottom, width=0.6, color=KIND_COLOURS[kinds.get(part, "other")],
                   edgecolor="white", linewidth=0.5)
            bottom += us
        total = times[tier].get("total", bottom)
        ax.text(x, bottom, f"{total:,.0f} µs", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(tiers)), tiers)
    ax.set_ylabel("µs per decode step")
    ax.set_title(title, fontsize=9)
    used = [k for k in KIND_COLOURS if k in {kinds.get(p, "other") for t in times.values() for p in t if p != "total"}]
    ax.legend(handles=[Patch(color=KIND_COLOURS[k], label=k) for k in used], fontsize=8, loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
