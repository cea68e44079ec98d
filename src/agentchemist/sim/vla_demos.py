"""Demonstrations for the VLA policy from the twin: the scripted backend as the expert.

Each episode records one coarse subtask (grasp the pipette, move over the beaker, return the pipette) at
the control rate: the three camera images, the right gripper's contact microphone, the 14 measured joints,
the 14 commanded targets (the action) and the subtask's instruction text. The expert moves each arm along a
straight joint-space line to the primitive's pose in the step's time (as a trajectory controller would),
then holds until the measured state reaches it.

The scene varies between episodes so that a policy has to look, not replay: the stirrer / beaker / probe /
pipette group and the meter and titrant bottle shift within the arms' reach (+-12 px in the front image),
the sensor noise changes (0.5..6 grey levels), a lighting gain and colour cast apply to every image, and
the arms start a little off their nominal pose. The expert's poses themselves are the named poses
(config/poses.yaml): until the scripted backend computes poses from where the camera sees labware (IK), the
demonstrations do not teach the policy to follow a moved object.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agentchemist.workcell.robot import SIDES
from agentchemist.paths import config_dir
from agentchemist.policy.primitives import Step, load_poses, plan_primitive, step_reached
from agentchemist.policy.vla.dataset import IMAGE_KEYS, DatasetWriter
from agentchemist.policy.vla.processor_vla import instruction_text
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.pipette_draw import PipetteDraw
from agentchemist.sim.scenario import read_scenario_yaml, scenario_from_dict

#: The coarse subtasks, in the order one titration does them (each starts where the previous ends).
SUBTASKS = ("grasp_pipette", "position_over_beaker", "return_pipette")
#: What a titration plan sends the action policy (config/protocols/acid_base_titration.yaml), in order: the
#: grasp, the draw at the titrant bottle, the move over the beaker (from the bottle, not from the pipette's
#: rest); no return (the plan ends with the pipette held over the beaker).
TITRATION_SUBTASKS = ("grasp_pipette", "draw_titrant", "position_over_beaker")
GROUP = ("stirrer", "beaker_main", "ph_probe", "pipette")


@dataclass
class EpisodeScene:
    """What varies between episodes."""
    seed: int
    shift_px: tuple[float, float]
    noise_sd: float
    gain: tuple[float, float, float]
    start_jitter: np.ndarray


def random_scene(rng: np.random.Generator, seed: int) -> EpisodeScene:
    return EpisodeScene(seed=seed, shift_px=(float(rng.uniform(-12, 12)), float(rng.uniform(-6, 6))),
                        noise_sd=float(rng.uniform(0.5, 6.0)), gain=tuple(float(g) for g in rng.uniform(0.8, 1.2, 3)),
                        start_jitter=rng.uniform(-0.05, 0.05, (2, 6)))


def twin_for(scene: EpisodeScene, scenario: str = "hcl_naoh.yaml", camera_px: tuple[int, int] = (160, 120),
             sample_rate: int = 16000) -> LabTwin:
    data = read_scenario_yaml(config_dir() / "scenarios" / scenario)
    data = copy.deepcopy(data)
    data["seed"] = scene.seed
    data["faults"], data.setdefault("expected", {})["anomalies"] = [], []
    data["cameras"] = {"width": camera_px[0], "height": camera_px[1], "rate_hz": 2.0, "noise_sd": scene.noise_sd}
    data.setdefault("audio", {})["sample_rate"] = sample_rate
    k = camera_px[0] / 320.0  # layout positions are given for 320 px
    du, dv = scene.shift_px
    for item in data["layout"]["items"]:
        u, v = item["position"]
        if item["id"] in GROUP:
            u, v = u + du, v + dv
        elif item["id"] in ("ph_meter", "titrant_bottle"):
            u, v = u - du / 2, v + dv / 2
        item["position"] = [u * k, v * k]
    return LabTwin(scenario_from_dict(data))


class TwinExpert:
    """Runs scripted primitives on a twin at the control rate, optionally recording frames."""

    def __init__(self, twin: LabTwin, scene: EpisodeScene, fps: int = 10, poses=None):
        self.twin, self.scene, self.fps = twin, scene, fps
        self.poses = poses or load_poses()
        self.t = 0.0
        self.samples = twin.scenario.audio.sample_rate // fps
        self.arm_cmd = {s: list(twin.arms[s].command) for s in SIDES}
        self.grip_cmd = {s: twin.grippers[s].command_m for s in SIDES}
        # The squeeze-release at the titrant bottle fills the pipette, as lab_sim does on the graph.
        self.draw = PipetteDraw(twin, self.poses)

    def action(self) -> np.ndarray:
        return np.array([*self.arm_cmd["left"], self.grip_cmd["left"], *self.arm_cmd["right"],
                         self.grip_cmd["right"]], np.float32)

    def observe(self) -> dict:
        g = np.asarray(self.scene.gain, np.float32)
        obs = {}
        for key in IMAGE_KEYS:
            img = self.twin.render_camera(key.rsplit(".", 1)[1], self.t).astype(np.float32) * g
            obs[key] = np.clip(img, 0, 255).astype(np.uint8)
        _, q = self.twin.joint_states()
        obs["observation.state"] = np.asarray(q, np.float32)
        audio = self.twin.audio("right", max(self.t - 1.0 / self.fps, 0.0), self.samples)
        obs["observation.audio"] = np.asarray(audio, np.float32) / 32768.0
        return obs

    def tick(self, frames: list | None) -> None:
        """One control period: record the observation and the commanded action, then advance."""
        if frames is not None:
            frame = self.observe()
            frame["action"] = self.action()
            frames.append(frame)
        for s in SIDES:
            self.twin.command_arm(s, self.arm_cmd[s], self.t)
            self.twin.command_gripper(s, self.grip_cmd[s], self.t)
        self.t += 1.0 / self.fps
        self.twin.step(self.t)
        self.draw.tick(self.t)

    def run_step(self, step: Step, frames: list | None) -> bool:
        n = max(1, int(round(step.duration_s * self.fps)))
        if step.kind == "arm":
            start = np.asarray(self.arm_cmd[step.side])
            goal = np.asarray(step.target)
            for i in range(1, n + 1):
                self.arm_cmd[step.side] = list(start + (goal - start) * i / n)
                self.tick(frames)
        elif step.kind == "gripper":
            self.grip_cmd[step.side] = float(step.target[0])
            self.tick(frames)
        else:
            for _ in range(n):
                self.tick(frames)
            return True
        for _ in range(int(step.timeout_s * self.fps)):
            arm = tuple(self.twin.arms[step.side].position)
            if step_reached(step, arm, self.twin.grippers[step.side].position_m, self.poses.tolerance_rad,
                            gripper_tolerance_m=0.001):
                return True
            self.tick(frames)
        return False

    def run(self, primitive: str, frames: list | None = None) -> bool:
        return all(self.run_step(s, frames) for s in plan_primitive(primitive, self.poses))


def start_episode(scene: EpisodeScene, subtask: str, fps: int = 10, chain=SUBTASKS, **twin_kw) -> TwinExpert:
    """A twin and expert standing where ``subtask`` starts: the subtasks before it in ``chain`` done (not
    recorded), the arms a little off their pose (the jitter) and settled."""
    expert = TwinExpert(twin_for(scene, **twin_kw), scene, fps)
    for name in chain[: chain.index(subtask)]:
        expert.run(name)
    for i, s in enumerate(SIDES):
        expert.arm_cmd[s] = list(np.asarray(expert.arm_cmd[s]) + scene.start_jitter[i])
    for _ in range(fps):  # settle on the jittered start
        expert.tick(None)
    return expert


def record_twin_demos(root: str | Path, episodes_per_subtask: int, seed: int = 0, fps: int = 10,
                      subtasks=SUBTASKS, camera_px: tuple[int, int] = (160, 120), sample_rate: int = 16000,
                      instructions: dict[str, str] | None = None) -> Path:
    """Write ``episodes_per_subtask`` randomised episodes of each subtask to a v3 dataset at ``root``. Each
    subtask starts where the one before it in ``subtasks`` ends. ``instructions``: the text recorded for a
    subtask (default its name, e.g. "grasp pipette"); the server runs only the texts it was trained on,
    so a policy meant to serve a plan's subtasks records the texts that plan sends ("grasp pipette
    (location=beaker_main)", see agentchemist.policy.vla.serve.subtask_instruction)."""
    unknown = sorted(set(instructions or {}) - set(subtasks))
    if unknown:
        raise ValueError(f"instructions for subtasks not recorded: {', '.join(unknown)} "
                         f"(recording {', '.join(subtasks)})")
    rng = np.random.default_rng(seed)
    w, h = camera_px
    writer = DatasetWriter(Path(root), fps, {k: (h, w, 3) for k in IMAGE_KEYS}, sample_rate // fps)
    for n in range(episodes_per_subtask):
        for subtask in subtasks:
            scene = random_scene(rng, seed=seed * 1000 + n)
            expert = start_episode(scene, subtask, fps, tuple(subtasks), camera_px=camera_px, sample_rate=sample_rate)
            frames: list[dict] = []
            if not expert.run(subtask, frames):
                raise RuntimeError(f"the scripted expert did not complete {subtask} (episode {n})")
            writer.add_episode(frames, (instructions or {}).get(subtask) or instruction_text(subtask))
    return writer.finalize()


# ---------------------------------------------------------------------------------------------- evaluation
#: Where each coarse subtask must leave the right arm (named pose) and gripper (opening, mm).
GOALS = {"grasp_pipette": ("pipette", "grasp_mm"), "position_over_beaker": ("over_beaker", "grasp_mm"),
         "return_pipette": ("home", "open_mm")}


def subtask_succeeded(expert: TwinExpert, subtask: str, tolerance_rad: float = 0.08,
                      gripper_tolerance_m: float = 0.004) -> bool:
    """The twin's measured right arm and gripper are where the subtask must leave them."""
    pose, grip = GOALS[subtask]
    arm = np.asarray(expert.twin.arms["right"].position)
    goal = np.asarray(expert.poses.pose("right", pose))
    opening = expert.twin.grippers["right"].position_m
    return bool(np.abs(arm - goal).max() <= tolerance_rad
                and abs(opening - expert.poses.gripper_mm[grip] / 1000.0) <= gripper_tolerance_m)


def run_policy_in_twin(episode, expert: TwinExpert, on_command=None) -> dict:
    """Drive the twin with a VLA episode (agentchemist.policy.vla.serve.VLAEpisode) at the control rate
    until it completes or aborts; returns its report (with "error" on an abort)."""
    from agentchemist.policy.vla.serve import Observation, PolicyAbort

    history: list[np.ndarray] = []
    while True:
        frame = expert.observe()
        history.append(frame["observation.audio"])
        now = expert.t
        obs = Observation(front=frame[IMAGE_KEYS[0]], wrists=[frame[IMAGE_KEYS[1]], frame[IMAGE_KEYS[2]]],
                          audio=np.concatenate(history[-20:]), audio_rate=expert.samples * expert.fps,
                          state=frame["observation.state"], stamps={})
        try:
            command = episode.step(obs, now)
        except PolicyAbort as exc:
            return {**episode.report(now, False), "error": str(exc)}
        if on_command is not None:
            on_command(command)
        for i, side in enumerate(SIDES):
            expert.arm_cmd[side] = list(command[7 * i:7 * i + 6])
            expert.grip_cmd[side] = float(command[7 * i + 6])
        expert.tick(None)
        if episode.done:
            return episode.report(expert.t, True)
