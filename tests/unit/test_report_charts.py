"""Report charts: the right axes and units, equivalence points marked where the analysis put them, and
PNG files that actually contain a picture."""

from __future__ import annotations

import functools

import matplotlib.image as mpimg
import numpy as np
import pytest

from agentchemist.chemistry.analysis import analyze_titration as _analyze_titration
from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.report import charts as ch

# These synthetic curves are concentration-based (titration_curve's default, no activity coefficients): they are
# analysed with activity=False; the analysis's own default is activity on (issue 41, one default).
analyze_titration = functools.partial(_analyze_titration, activity=False)


@pytest.fixture(scope="module")
def maleic():
    rng = np.random.default_rng(5)
    v = np.concatenate(([0.0], np.cumsum(0.046875 * (1 + 0.03 * rng.standard_normal(1300)))))
    v = v[v <= 60.0]
    ph = titration_curve({"maleic_acid": 0.1}, 25.0, {"naoh": 0.1}, v) + rng.normal(0, 0.01, v.size)
    return analyze_titration(v, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="maleic_acid",
                             quality_flags=[(40.0, 40.05)])


def _vertical_lines(ax) -> list[float]:
    """x positions of the vertical lines (axvline) drawn on an axes."""
    out = []
    for line in ax.get_lines():
        x = np.asarray(line.get_xdata(), dtype=float)
        if x.size == 2 and x[0] == x[1]:
            out.append(float(x[0]))
    return out


def test_titration_curve_axes_and_marks(maleic):
    fig = ch.titration_curve_figure(maleic, titrant_label="NaOH")
    (ax,) = fig.axes
    assert ax.get_xlabel() == "NaOH added (mL)" and ax.get_ylabel() == "pH"
    marked = _vertical_lines(ax)
    assert marked == pytest.approx([e.volume_ml for e in maleic.equivalence_points])
    labels = [t.get_text() for t in ax.texts]
    assert any("pKa2 = 6.2" in t and "half equivalence" in t for t in labels)
    assert any(t.startswith("Curve fit:") and "pKa1 = 1.9" in t for t in labels)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "equivalence point" in legend and "flagged data" in legend and "equilibrium-model fit (whole curve)" in legend
    assert any(t.startswith("equivalence pH ") for t in legend)


def test_derivative_charts_have_units_and_equivalence_points(maleic):
    d1 = ch.first_derivative_figure(maleic, titrant_label="NaOH").axes[0]
    d2 = ch.second_derivative_figure(maleic, titrant_label="NaOH").axes[0]
    assert d1.get_ylabel() == "dpH/dV (pH/mL)" and d1.get_xlabel() == "NaOH added (mL)"
    assert d2.get_ylabel() == "d²pH/dV² (pH/mL²)"
    for ax in (d1, d2):
        for eq in maleic.equivalence_points:
            assert any(abs(x - eq.volume_ml) < 1e-9 for x in _vertical_lines(ax))
    # The first-derivative curve peaks at each marked equivalence point.
    line = d1.get_lines()[0]
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    for eq in maleic.equivalence_points:
        near = np.abs(x - eq.volume_ml) < 2.0
        assert abs(x[near][np.argmax(y[near])] - eq.volume_ml) < 0.3


def test_jump_zoom_has_one_panel_per_equivalence_point(maleic):
    fig = ch.jump_zoom_figure(maleic, titrant_label="NaOH")
    assert len(fig.axes) == len(maleic.equivalence_points) == 2
    for ax, eq in zip(fig.axes, maleic.equivalence_points):
        lo, hi = ax.get_xlim()
        assert lo < eq.volume_ml < hi and hi - lo < 10.0
        assert ax.get_ylabel() == "pH" and "(mL)" in ax.get_xlabel()
        assert any("V$_{eq" in t.get_text() for t in ax.get_legend().get_texts())


def test_jump_zoom_without_equivalence_point_says_so():
    v = np.linspace(0.0, 10.0, 200)
    ph = titration_curve({"acetic_acid": 0.1}, 25.0, {"naoh": 0.1}, v)
    analysis = analyze_titration(v, ph)
    (ax,) = ch.jump_zoom_figure(analysis).axes
    assert "No equivalence point" in ax.get_title()
    assert any("no equivalence point" in t.get_text() for t in ax.texts)


def test_time_series_units_follow_duration():
    stamps = 100.0 + np.arange(0, 3 * 3600, 60.0)
    fig = ch.time_series_figure(stamps, np.linspace(1, 12, stamps.size), t0=100.0, ylabel="pH", title="pH")
    assert fig.axes[0].get_xlabel() == "Time since start (min)"
    short = ch.time_series_figure(stamps[:5], np.arange(5.0), t0=100.0, ylabel="pH", title="pH")
    assert short.axes[0].get_xlabel() == "Time since start (s)"
    with_channels = ch.time_series_figure(stamps, np.arange(stamps.size) * 0.05, t0=100.0,
                                          ylabel="Titrant volume (mL)", title="V",
                                          extra=[(stamps, np.arange(stamps.size) * 0.051, "audio")])
    assert [a.get_ylabel() for a in with_channels.axes] == ["Titrant volume (mL)", "channel − fused (mL)"]


def test_saved_png_is_a_real_picture(maleic, tmp_path):
    path = ch.save_png(ch.titration_curve_figure(maleic), tmp_path / "sub" / "curve.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    pixels = mpimg.imread(path)
    assert pixels.shape[0] > 300 and pixels.shape[1] > 500
    assert float(pixels[..., :3].std()) > 0.05
    assert len(np.unique(pixels[..., :3].reshape(-1, 3), axis=0)) > 50


def test_a_steady_temperature_is_drawn_on_a_readable_span():
    stamps = np.arange(0.0, 600.0, 1.0)
    noise = np.random.default_rng(1).choice([-0.02, -0.01, 0.0, 0.01, 0.02], stamps.size)
    fig = ch.time_series_figure(stamps, 25.0 + noise, t0=0.0, ylabel="T", title="T", min_span=1.0)
    lo, hi = fig.axes[0].get_ylim()
    assert hi - lo == pytest.approx(1.0) and lo < 25.0 < hi
    wide = ch.time_series_figure(stamps, np.linspace(20.0, 30.0, stamps.size), t0=0.0, ylabel="T", title="T",
                                 min_span=1.0)
    lo, hi = wide.axes[0].get_ylim()
    assert lo <= 20.0 and hi >= 30.0  # a real change keeps its own range


def test_colour_curve_shows_the_hue_step_with_a_zoom_on_the_endpoint():
    volumes = np.linspace(0.0, 25.0, 500)
    hues = np.where(volumes < 24.9, 330.0, 230.0)
    fig = ch.colour_curve_figure(volumes, hues, endpoint_ml=24.95, colour_change=("magenta", "blue"))
    whole, zoom = fig.axes[:2]
    assert zoom.get_xlim()[0] == pytest.approx(24.95 - 0.6)
    assert "magenta -> blue" in fig._suptitle.get_text()
    assert whole.collections[0].get_offsets().shape == (500, 2)
    alone = ch.colour_curve_figure(volumes, hues)  # no endpoint: one panel
    assert len(alone.axes) == 1
