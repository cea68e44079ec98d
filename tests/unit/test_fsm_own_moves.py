"""OwnMoves: the bench watch restarts from the first frame after the robot's own motion, without what it holds."""
from agentchemist.fsm.own_moves import OwnMoves


def test_the_first_frame_after_a_motion_is_the_bench_once():
    moves = OwnMoves()
    assert not moves.rebaseline(1.0)  # nothing moved
    moves.moving()
    assert not moves.rebaseline(2.0)  # during the motion: not the bench
    moves.moved(5.0, held="solid_bottle")
    assert not moves.rebaseline(5.0)  # taken at the end itself: may still show the motion
    assert moves.rebaseline(5.2) and not moves.rebaseline(5.4)
    assert moves.held == {"solid_bottle"}


def test_a_new_motion_cancels_a_pending_rebaseline_and_reset_forgets_everything():
    moves = OwnMoves()
    moves.moved(3.0, held="beaker_main")
    moves.moving()
    assert not moves.rebaseline(4.0)
    moves.moved(6.0)
    assert moves.held == {"beaker_main"}
    moves.reset()
    assert moves.held == set() and not moves.rebaseline(7.0)


def test_frames_while_the_arm_passes_the_bench_are_not_compared():
    moves = OwnMoves()
    assert not moves.blind(1.0)
    moves.passing(2.0)
    assert not moves.blind(1.9) and moves.blind(2.0) and moves.blind(30.0)  # until the motion is over
    moves.passed(6.0)
    assert moves.blind(6.0) and not moves.blind(6.1)
    assert not moves.rebaseline(6.1)  # the reference stays the scene check's
    moves.passing(8.0)
    moves.reset()
    assert not moves.blind(9.0)
