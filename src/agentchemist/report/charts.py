"""Report charts as matplotlib figures (Agg canvas, no pyplot state: safe in a ROS node's threads).

Every function returns a :class:`matplotlib.figure.Figure` so tests can check axis labels and marked
points on the object; :func:`save_png` writes it. The four titration charts of the paper are the curve,
its first and second derivative and a zoom on each jump; equivalence points are drawn solid red when
supported and dashed grey when the evidence check rejected them (the legend says which).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from agentchemist.chemistry.analysis import TitrationAnalysis

from .stated import gum_text

__all__ = [
    "first_derivative_figure",
    "jump_zoom_figure",
    "save_png",
    "second_derivative_figure",
    "time_axis",
    "time_series_figure",
    "titration_curve_figure",
]

SIZE_IN = (8.0, 4.8)
DPI = 110
SUPPORTED = "#c0392b"
UNSUPPORTED = "#7f8c8d"
FLAGGED = "#f39c12"


def _figure(nrows: int = 1, ncols: int = 1, size: tuple[float, float] = SIZE_IN):
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat:
        ax.grid(True, color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
    return fig, axes


def save_png(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as PNG to ``path`` (parents created) and return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=DPI)
    return out


def _volume_label(titrant_label: str) -> str:
    return f"{titrant_label} added (mL)" if titrant_label else "Titrant volume added (mL)"


def _stated_u(estimate) -> float:
    """The uncertainty the report states for an equivalence point or a pKa: its budget's combined standard
    uncertainty (all sources), not the location-only figure; the charts show the same ± as the text."""
    budget = getattr(estimate, "budget", None)
    if budget is not None:
        return budget.combined
    return getattr(estimate, "uncertainty_ml", None) or getattr(estimate, "uncertainty", math.nan)


def _mark_equivalence(ax, analysis: TitrationAnalysis, *, annotate: bool, y_text: float | None = None) -> None:
    labelled = set()
    for eq in analysis.equivalence_points:
        colour, style = (SUPPORTED, "-") if eq.supported else (UNSUPPORTED, "--")
        key = "supported" if eq.supported else "unsupported"
        label = None
        if key not in labelled:
            label = "equivalence point" if eq.supported else "equivalence point (not supported)"
            labelled.add(key)
        ax.axvline(eq.volume_ml, color=colour, linestyle=style, linewidth=1.1, label=label)
        if annotate:
            y = y_text if y_text is not None else ax.get_ylim()[1]
            # Near the right edge the label goes to the left of the line, so it stays inside the axes.
            x_lo, x_hi = _data_span(analysis)
            right = eq.volume_ml > x_lo + 0.7 * (x_hi - x_lo)
            ax.annotate(f"V$_{{eq{eq.index}}}$ = {gum_text(eq.volume_ml, _stated_u(eq), 'mL')}", (eq.volume_ml, y),
                        xytext=(-4 if right else 4, -4), textcoords="offset points",
                        ha="right" if right else "left", va="top", fontsize=8, color=colour)


def _data_span(analysis: TitrationAnalysis) -> tuple[float, float]:
    v = analysis.volume_ml
    return (float(v[0]), float(v[-1])) if v.size else (0.0, 1.0)


def _deriv_window(analysis: TitrationAnalysis) -> str:
    shown = analysis.smoothing.get("display_derivative") if analysis.d1_display is not None else None
    if shown:
        return f"smoothed over {shown['window_ml']:.2g} mL, about 7 measured points"
    return f"smoothed over {analysis.smoothing.get('window_ml', float('nan')):.2g} mL"


def _display_curve(analysis: TitrationAnalysis) -> np.ndarray:
    """The smoothed line as drawn: between two measured points it stays within their pH range widened by three
    times the noise. A smoothing window wider than a sparse stretch before a jump otherwise dips or overshoots
    by tenths of a pH where no reading is (display only: the analysis uses its own curve)."""
    line = analysis.ph_adaptive if analysis.ph_adaptive is not None else analysis.ph_smooth
    v, p, grid = analysis.volume_ml, analysis.ph, analysis.grid_ml
    if v.size < 2 or grid.size != line.size:
        return line
    noise = float(analysis.smoothing.get("noise_sd_ph") or 0.0)
    k = np.clip(np.searchsorted(v, grid), 1, v.size - 1)
    lo = np.minimum(p[k - 1], p[k]) - 3.0 * noise
    hi = np.maximum(p[k - 1], p[k]) + 3.0 * noise
    return np.clip(line, lo, hi)


def _shade_flags(ax, analysis: TitrationAnalysis) -> None:
    span = float(np.ptp(analysis.volume_ml)) if analysis.volume_ml.size else 1.0
    for i, (a, b) in enumerate(analysis.quality_flags):
        # A single flagged drop is a hair-thin range: widen it to stay visible at full-curve scale.
        half = max(b - a, 4e-3 * span) / 2
        mid = (a + b) / 2
        ax.axvspan(mid - half, mid + half, color=FLAGGED, alpha=0.35, linewidth=0,
                   label="flagged data" if i == 0 else None)


def titration_curve_figure(analysis: TitrationAnalysis, *, titrant_label: str = "", title: str = "",
                           theory_ph: np.ndarray | None = None, standardised_m: float | None = None) -> Figure:
    """pH against titrant volume: measured points, smoothed curve, fit and theory, equivalence and pKa.
    ``standardised_m``: a standardisation's result (the titrant's concentration, mol/L); the fit's analyte
    concentration, computed from the titrant's planning estimate, is then not printed as if it were one."""
    fig, axes = _figure()
    ax = axes[0, 0]
    v, p = analysis.volume_ml, analysis.ph
    # Points underneath, lines on top (zorder), each line in its own colour, style and width, so every
    # line named in the legend stays visible where the curves coincide.
    ax.plot(v, p, "o", markersize=2.2, color="#2c3e50", alpha=0.45, zorder=2, label=f"measured ({v.size} points)")
    jumps = any(e.method == "model_fit_across_jump" for e in analysis.equivalence_points)
    if analysis.grid_ml.size:
        ax.plot(analysis.grid_ml, _display_curve(analysis), "-", color="#2980b9", linewidth=1.0, zorder=3,
                label=f"Savitzky-Golay ({analysis.smoothing.get('window_points')} points)"
                + ("; model fitted across each jump" if jumps else "; local window at jumps"))
    fit = analysis.fit
    if fit is not None and fit.converged and fit.ph_fit is not None:
        ax.plot(analysis.grid_ml, fit.ph_fit, linestyle=(0, (5, 3)), color="#27ae60", linewidth=2.0, alpha=0.9, zorder=4,
                label="equilibrium-model fit (whole curve)")
    if theory_ph is not None and theory_ph.size == v.size:
        ax.plot(v, theory_ph, linestyle=(0, (1, 2)), color="#8e44ad", linewidth=2.4, zorder=5,
                label="theory (nominal concentrations)")
    for eq in analysis.equivalence_points:
        if math.isfinite(eq.ph):
            ax.plot([eq.volume_ml], [eq.ph], "o", markersize=7, markerfacecolor="white", zorder=6,
                    markeredgecolor=SUPPORTED if eq.supported else UNSUPPORTED, markeredgewidth=1.6,
                    label=f"equivalence pH {eq.ph:.2f}" if eq.index == 1 else None)
    _shade_flags(ax, analysis)
    ax.set_xlabel(_volume_label(titrant_label))
    ax.set_ylabel("pH")
    if v.size:
        ax.set_ylim(min(float(np.min(p)), 0.0 if np.min(p) < 1 else float(np.min(p))) - 0.3, float(np.max(p)) + 0.6)
    _mark_equivalence(ax, analysis, annotate=True)
    for est in analysis.pka:
        if est.method == "half_equivalence" and est.supported and math.isfinite(est.value):
            ax.plot([est.half_equivalence_volume_ml], [est.value], "D", color="#d35400", markersize=6)
            ax.annotate(f"pKa{est.index} = {est.value:.2f}\n(half equivalence)", (est.half_equivalence_volume_ml, est.value),
                        xytext=(6, -22), textcoords="offset points", fontsize=8, color="#d35400")
    fitted = []
    if fit is not None:
        for est in analysis.pka:
            if est.method == "curve_fit" and math.isfinite(est.value):
                # a pKa the report refuses is not printed as a number here either
                fitted.append(f"pKa{est.index} = {gum_text(est.value, _stated_u(est))}" if est.supported
                              else f"pKa{est.index}: not stated (see the report)")
        conc = analysis.concentration or {}
        if standardised_m is not None:
            fitted.append(f"titrant standardised (from V_eq):\n  c = {standardised_m:.5f} mol/L")
        elif conc.get("supported") and conc.get("analyte_m"):
            fitted.append(f"c = {gum_text(conc['analyte_m'], conc['uncertainty_m'], 'mol/L')} (from V_eq)")
        elif "analyte_m" in fit.parameters:
            fitted.append("c: not stated (see the report)")
    if fitted:
        ax.text(0.98, 0.04, "Curve fit:\n" + "\n".join(fitted), transform=ax.transAxes, ha="right", va="bottom",
                fontsize=8, bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "#27ae60", "alpha": 0.9})
    ax.set_title(title or "Titration curve")
    ax.legend(loc="best", fontsize=8, framealpha=0.9)
    return fig


def first_derivative_figure(analysis: TitrationAnalysis, *, titrant_label: str = "") -> Figure:
    """dpH/dV of the smoothed curve with the equivalence points (derivative peaks) marked."""
    d1 = analysis.d1_display if analysis.d1_display is not None else analysis.d1
    return _derivative_figure(analysis, d1, "first derivative", linewidth=1.2, ylabel="dpH/dV (pH/mL)",
                              title="First derivative: peaks at the equivalence points",
                              titrant_label=titrant_label)


def second_derivative_figure(analysis: TitrationAnalysis, *, titrant_label: str = "") -> Figure:
    """d2pH/dV2 with its zero line; equivalence points sit at the + to - zero crossings."""
    d2 = analysis.d2_display if analysis.d2_display is not None else analysis.d2
    return _derivative_figure(analysis, d2, "second derivative", linewidth=1.0, ylabel="d²pH/dV² (pH/mL²)",
                              title="Second derivative: zero crossings at the equivalence points",
                              titrant_label=titrant_label, about_zero=True)


def _derivative_figure(analysis: TitrationAnalysis, values: np.ndarray, name: str, *, linewidth: float,
                       ylabel: str, title: str, titrant_label: str, about_zero: bool = False) -> Figure:
    """A derivative of the curve on the resampled grid, flags shaded and equivalence points marked;
    ``about_zero``: a curve whose sign matters, drawn with its zero line and a symmetric scale."""
    fig, axes = _figure()
    ax = axes[0, 0]
    ax.plot(analysis.grid_ml, values, "-", color="#2980b9", linewidth=linewidth,
            label=f"{name} ({_deriv_window(analysis)})")
    if about_zero:
        ax.axhline(0.0, color="black", linewidth=0.7)
    _shade_flags(ax, analysis)
    if about_zero and values.size:
        # Clip to the part of the range that holds the derivative structure, not a single spike's tail.
        peak = float(np.max(np.abs(values)))
        ax.set_ylim(-1.15 * peak, 1.15 * peak)
    ax.set_xlabel(_volume_label(titrant_label))
    ax.set_ylabel(ylabel)
    _mark_equivalence(ax, analysis, annotate=True)
    ax.set_title(title)
    ax.legend(loc="best", fontsize=8)  # placed clear of the curve and of the V_eq label
    return fig


def _zoom_window(analysis: TitrationAnalysis, centre: float, jump: tuple[float, float]) -> tuple[float, float]:
    v = analysis.volume_ml
    steps = np.diff(v)
    step = float(np.median(steps[steps > 0])) if steps.size else 1.0
    half = max(10 * step, 1.5 * (jump[1] - jump[0]) if all(map(math.isfinite, jump)) else 0.0)
    return max(centre - half, float(v[0])), min(centre + half, float(v[-1]))


def colour_curve_figure(volumes_ml: np.ndarray, hues_deg: np.ndarray, *, endpoint_ml: float | None = None,
                        titrant_label: str = "", colour_change: tuple[str, str] | None = None,
                        zoom_ml: float = 0.6) -> Figure:
    """The front camera's liquid hue (deg) against titrant volume: a colour endpoint is where the hue
    steps. Each point is drawn in its own hue, so the chart shows the colours the camera saw. With an
    endpoint, a second panel zooms on the last ``zoom_ml`` before it (and what follows)."""
    from matplotlib.colors import hsv_to_rgb

    v = np.asarray(volumes_ml, float)
    h = np.asarray(hues_deg, float)
    ok = np.isfinite(v) & np.isfinite(h)
    v, h = v[ok], h[ok]
    has_endpoint = endpoint_ml is not None and math.isfinite(endpoint_ml)
    fig, axes = _figure(1, 2 if has_endpoint else 1, size=(SIZE_IN[0] * (1.5 if has_endpoint else 1.0), SIZE_IN[1]))
    rgb = hsv_to_rgb(np.column_stack([np.mod(h, 360.0) / 360.0, np.full(h.size, 0.75), np.full(h.size, 0.85)]))
    for k, ax in enumerate(axes.flat):
        ax.scatter(v, h, s=9 if k == 0 else 16, c=rgb if h.size else None, edgecolors="#555555", linewidths=0.2,
                   label="hue of the liquid")
        if has_endpoint:
            ax.axvline(endpoint_ml, color=SUPPORTED, linewidth=1.2, label=f"endpoint {endpoint_ml:.3f} mL")
        ax.set_ylim(0.0, 360.0)
        ax.set_yticks(range(0, 361, 60))
        ax.set_xlabel(_volume_label(titrant_label))
        ax.set_ylabel("Hue (deg)")
    title = "Solution colour against titrant volume"
    if colour_change:
        title += f" (expected {colour_change[0]} -> {colour_change[1]})"
    axes.flat[0].set_title(title if not has_endpoint else "Whole run")
    axes.flat[0].legend(loc="lower left", fontsize=8)
    if has_endpoint:
        zoom = axes.flat[1]
        after = v[v > endpoint_ml]
        zoom.set_xlim(endpoint_ml - zoom_ml, max(float(after.max()) if after.size else endpoint_ml, endpoint_ml)
                      + 0.1 * zoom_ml)
        zoom.set_title(f"Last {zoom_ml:g} mL before the endpoint")
        fig.suptitle(title)
    return fig


def jump_zoom_figure(analysis: TitrationAnalysis, *, titrant_label: str = "") -> Figure:
    """One panel per equivalence point (or the steepest region): every measured point through the jump."""
    targets = [(e.volume_ml, e.jump_region_ml, e) for e in analysis.equivalence_points]
    if not targets and analysis.volume_ml.size:
        # No jump located: show where one would have to be, the last fifth of the curve.
        v = analysis.volume_ml
        span = float(v[-1] - v[0])
        centre = float(v[-1]) - 0.1 * span
        targets = [(centre, (centre - span / 15.0, centre), None)]  # _zoom_window: +-1.5 x width = +-10 %
    n = max(len(targets), 1)
    fig, axes = _figure(1, n, size=(max(SIZE_IN[0], 4.2 * n), SIZE_IN[1]))
    for k, ax in enumerate(axes.flat):
        ax.set_xlabel(_volume_label(titrant_label))
        ax.set_ylabel("pH")
        if k >= len(targets):
            ax.set_title("no data")
            continue
        centre, jump, eq = targets[k]
        lo, hi = _zoom_window(analysis, centre, jump)
        inside = (analysis.volume_ml >= lo) & (analysis.volume_ml <= hi)
        grid_in = (analysis.grid_ml >= lo) & (analysis.grid_ml <= hi)
        window = eq.window_points if eq is not None else analysis.smoothing.get("window_points")
        if eq is not None and eq.model_curve is not None:
            mv, mp = eq.model_curve
            ax.plot(mv, mp, "-", color="#2980b9", linewidth=1.2, label="equilibrium model fitted across the jump")
        else:
            ax.plot(analysis.grid_ml[grid_in], _display_curve(analysis)[grid_in], "-", color="#2980b9", linewidth=1.0,
                    label=f"smoothed (local window {window} points)")
        if eq is not None and math.isfinite(eq.ph):
            ax.plot([eq.volume_ml], [eq.ph], "o", markersize=7, markerfacecolor="white", zorder=6,
                    markeredgecolor=SUPPORTED if eq.supported else UNSUPPORTED, markeredgewidth=1.6,
                    label=f"equivalence: pH {eq.ph:.2f}")
        ax.plot(analysis.volume_ml[inside], analysis.ph[inside], "o", markersize=4, color="#2c3e50",
                label=f"measured ({int(inside.sum())} points)")
        for a, b in analysis.quality_flags:
            if b >= lo and a <= hi:
                ax.axvspan(a, max(b, a + 1e-3 * (hi - lo)), color=FLAGGED, alpha=0.25, linewidth=0, label="flagged data")
        ax.set_xlim(lo, hi)
        if eq is not None:
            colour, style = (SUPPORTED, "-") if eq.supported else (UNSUPPORTED, "--")
            ax.axvline(eq.volume_ml, color=colour, linestyle=style, linewidth=1.1,
                       label=f"V$_{{eq{eq.index}}}$ = {gum_text(eq.volume_ml, _stated_u(eq), 'mL')}"
                       + ("" if eq.supported else " (not supported)"))
            ax.set_title(f"Jump around equivalence point {eq.index}")
        else:
            ax.set_title("No equivalence point located: end of the measured curve")
            why = next((w for w in analysis.warnings if "equivalence point" in w or "jump" in w), "")
            if why:
                ax.text(0.98, 0.04, textwrap.fill(why, 60), transform=ax.transAxes, ha="right", va="bottom", fontsize=7.5,
                        bbox={"boxstyle": "round", "facecolor": "#fff6e5", "edgecolor": FLAGGED})
        ax.legend(loc="upper left", fontsize=8)
    return fig


def time_axis(stamps: np.ndarray, t0: float) -> tuple[np.ndarray, str]:
    """Elapsed time since ``t0`` in s, min or h (whichever keeps the numbers readable) and its label."""
    elapsed = np.asarray(stamps, float) - t0
    span = float(np.max(elapsed)) if elapsed.size else 0.0
    if span <= 600:
        return elapsed, "Time since start (s)"
    if span <= 600 * 60:
        return elapsed / 60.0, "Time since start (min)"
    return elapsed / 3600.0, "Time since start (h)"


def time_series_figure(
    stamps: np.ndarray,
    values: np.ndarray,
    *,
    t0: float,
    ylabel: str,
    title: str,
    label: str = "fused",
    markers: tuple[np.ndarray, np.ndarray, str] | None = None,
    extra: Sequence[tuple[np.ndarray, np.ndarray, str]] = (),
    events: Sequence[tuple[float, str]] = (),
    min_span: float | None = None,
) -> Figure:
    """A quantity against elapsed time; ``markers`` adds a point series (stamps, values, label);
    ``extra`` series (per-channel estimates) are drawn as differences from the main series in a lower
    panel, where their disagreement is visible; ``events`` draw vertical lines such as anomalies.
    ``min_span``: the value axis spans at least this much, centred on the data (a steady temperature's
    0.01 degC meter steps would otherwise fill the chart and read as a fluctuation)."""
    if extra:
        fig = Figure(figsize=(SIZE_IN[0], SIZE_IN[1] * 1.35), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        ax, ax_diff = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1.3))
        for a in (ax, ax_diff):
            a.grid(True, color="#dddddd", linewidth=0.6)
    else:
        fig, axes = _figure()
        ax, ax_diff = axes[0, 0], None
    x, xlabel = time_axis(stamps, t0)
    scale = 1.0
    if len(stamps) and len(x) and float(np.max(np.abs(x))) > 0:
        scale = float(np.max(np.asarray(stamps) - t0)) / float(np.max(x))
    style = "-o" if len(values) < 60 else "-"
    ax.plot(x, values, style, color="#2c3e50", linewidth=1.2, markersize=3, label=label)
    if ax_diff is not None:
        for s, vals, lab in extra:
            ref = np.interp(np.asarray(s, float), np.asarray(stamps, float), np.asarray(values, float))
            ax_diff.plot((np.asarray(s) - t0) / scale, np.asarray(vals) - ref, "-", linewidth=0.9, label=lab)
        ax_diff.axhline(0.0, color="black", linewidth=0.6)
        unit = ylabel[ylabel.rfind("("):] if ylabel.endswith(")") and "(" in ylabel else ""
        ax_diff.set_ylabel(f"channel − {label} {unit}".strip())
        ax_diff.set_xlabel(xlabel)
        ax_diff.legend(loc="best", fontsize=8)
    if markers is not None:
        s, vals, lab = markers
        ax.plot((np.asarray(s) - t0) / scale, vals, "o", markersize=2.5, color="#c0392b", label=lab)
    for i, (stamp, lab) in enumerate(events):
        for a in (ax, ax_diff):
            if a is not None:
                a.axvline((stamp - t0) / scale, color=FLAGGED, linewidth=1.0, linestyle="--",
                          label="anomaly" if i == 0 and a is ax else None)
    if min_span is not None and len(values):
        finite = np.asarray(values, float)[np.isfinite(np.asarray(values, float))]
        if finite.size and float(finite.max() - finite.min()) < min_span:
            mid = 0.5 * float(finite.max() + finite.min())
            ax.set_ylim(mid - 0.5 * min_span, mid + 0.5 * min_span)
    if ax_diff is None:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="best", fontsize=8)
    return fig
