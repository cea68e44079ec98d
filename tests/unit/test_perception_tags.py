"""TagFinder: one tag's centre and side, searched near its last place first, then in the whole frame."""
import numpy as np
import pytest

from agentchemist.perception.tags import TagFinder
from agentchemist.sim.markers import marker_image


def _frame(marker_id=1, at=(300, 200), cell=8, shape=(480, 640)):
    grey = np.full(shape, 255, np.uint8)
    tag = marker_image(marker_id, cell)
    x, y = at
    grey[y:y + tag.shape[0], x:x + tag.shape[1]] = tag
    return grey, (x + tag.shape[1] / 2, y + tag.shape[0] / 2, float(tag.shape[0]))


def test_finds_the_tag_in_the_whole_frame_and_near_its_last_place():
    grey, (u, v, side) = _frame()
    finder = TagFinder(1, 3.0)
    for near in (None, (u + 10, v - 5, side)):
        found = finder.find(grey, near)
        assert found is not None
        assert abs(found[0] - (u - 0.5)) < 1.5 and abs(found[1] - (v - 0.5)) < 1.5 and abs(found[2] - side) < 2


def test_a_stale_last_place_falls_back_to_the_whole_frame():
    grey, (u, v, side) = _frame(at=(40, 40))
    found = TagFinder(1, 3.0).find(grey, (600.0, 440.0, side))  # its crop is a sliver at the corner
    assert found is not None and abs(found[0] - u) < 2


def test_another_tag_or_none_is_not_found():
    grey, (u, v, side) = _frame(marker_id=2)
    assert TagFinder(1, 3.0).find(grey) is None
    assert TagFinder(1, 3.0).find(np.full((480, 640), 255, np.uint8), (u, v, side)) is None


def test_tag_aspect_reads_the_view_from_the_tags_shape_whatever_its_rotation():
    from agentchemist.perception.tags import tag_aspect

    square = np.array([[10, 10], [30, 10], [30, 30], [10, 30]], float)
    flat = np.array([[10, 10], [30, 10], [30, 21], [10, 21]], float)  # seen from 56 deg above: cos = 0.55
    assert tag_aspect(square) == pytest.approx(1.0)
    assert tag_aspect(flat) == pytest.approx(0.55)
    assert tag_aspect(np.roll(flat, 1, axis=0)) == pytest.approx(0.55)  # the printed tag turned a quarter
