"""The VLA backend's node parameters, apart from the model: action_policy declares them whatever its
backend, and importing serve.py (torch, transformers: 8-30 s) in a node that runs the scripted backend made
it slow to come up and to stop (issue 39: past launch's 5 s after Ctrl-C)."""
from __future__ import annotations

from dataclasses import dataclass

from agentchemist.params import param


@dataclass(frozen=True)
class VLAServeConfig:
    checkpoint: str = param("", description="VLA checkpoint directory (config.json + model.safetensors); "
                                            "'' = none (the vla backend refuses every goal)")
    ode_steps: int = param(0, low=0, high=100, description="Euler steps of the flow-matching sampler "
                                                           "(0 = the checkpoint's ode_steps)")
    query_every: int = param(1, low=1, high=100, description="Control ticks between policy queries")
    ensemble_decay: float = param(0.1, low=0.0, high=10.0,
                                  description="Temporal ensembling weight exp(-m * i), i = chunk age (ACT's m)")
    max_duration_s: float = param(30.0, unit="s", low=0.5, high=600.0,
                                  description="Abort a subtask the policy has not completed in this long")
    settle_s: float = param(0.5, unit="s", low=0.0, high=10.0,
                            description="Done when the command moved less than settle_rad for this long")
    settle_rad: float = param(0.02, unit="rad", low=0.0, high=0.5,
                              description="Settled: every command of the last settle_s within this of the latest")
    settle_m: float = param(0.001, unit="m", low=0.0, high=0.07,
                            description="The same as settle_rad for the gripper openings")
    draw_squeeze_below_m: float = param(0.017, unit="m", low=0.0, high=0.07, description="A draw is done only "
                                        "after the measured right gripper closed below this (the squeeze; "
                                        "poses.yaml draw_squeeze_mm 12 + 5 mm)")
    draw_release_above_m: float = param(0.0595, unit="m", low=0.0, high=0.07, description="... and opened "
                                        "again above this (the release that draws; grasp_mm 60 - 0.5 mm)")
    reached_rad: float = param(0.05, unit="rad", low=0.0, high=0.5,
                               description="Measured joints this close to the settled command: done")
    observation_max_age_s: float = param(2.0, unit="s", low=0.0, high=60.0,
                                         description="Older observations are missing (the subtask aborts)")
    deterministic: bool = param(True, description="Sample from fixed seeded noises (the same observation gives "
                                "the same chunk) instead of fresh random noise")
    samples: int = param(4, low=1, high=64, description="Chunks sampled per query (one batch, the observation "
                         "encoded once); the medoid is kept: a chunk in the densest mode, never the average "
                         "of two (1 = one chunk; from zero noise when deterministic)")
    output_margin: float = param(0.5, unit="rad", low=0.0, high=3.0, description="An arm joint output beyond "
                                 "its limit by more than this is garbage: the subtask aborts")
    output_margin_gripper_m: float = param(0.01, unit="m", low=0.0, high=0.07, description="The same for a "
                                           "gripper opening (its range is 0..0.07 m)")
