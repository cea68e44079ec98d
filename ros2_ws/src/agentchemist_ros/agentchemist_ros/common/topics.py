"""Default topic names (DESIGN.md topic map); all are remappable."""
PLAN = "/agentchemist/plan"
MESSAGES = "/agentchemist/messages"
FSM_STATE = "/agentchemist/fsm_state"
QUANTITY = "/agentchemist/quantity"
ANOMALIES = "/agentchemist/anomalies"
RECORDS = "/agentchemist/records"
AUDIO_EVENTS = "/agentchemist/audio_events"
DISPENSER_STATE = "/agentchemist/dispenser_state"  # DispenserState, latched: from the dispenser only
PEER_WAITS = "/agentchemist/peer_waits"  # PeerWait, latched per node: requests waiting on a peer
CLOCK_ACKS = "/agentchemist/clock_acks"  # ClockAck: the sim time each agent has reached
HEARTBEATS = "/agentchemist/heartbeats"  # Heartbeat: a node in its own process is alive (fsm/node_watch.py)
RECORDER_STATUS = "/agentchemist/recorder_status"  # RecorderStatus: the recorder acknowledges and keeps up
PH_READING = "/lab/ph_meter/reading"
#: the pH meter's electrode calibration state (std_msgs/String JSON, latched): probe, corrected, problem ...
PH_CALIBRATION = "/lab/ph_meter/calibration"
BALANCE_READING = "/lab/balance/reading"
BALANCE_TARE = "/lab/balance/tare"       # std_srvs/srv/Trigger, served by lab_sim or the balance driver
BALANCE_ZERO = "/lab/balance/zero"       # std_srvs/srv/Trigger, served by the balance driver
PH_STABLE = "/lab/ph_meter/stable"       # std_msgs/Bool with each pH: the meter's stability (drivers)
BALANCE_STABLE = "/lab/balance/stable"   # std_msgs/Bool with each mass: the balance's stability flag
JOINT_STATES = "/joint_states"
GROUND_TRUTH = "/lab_sim/ground_truth"
BENCH_MARKERS = "/lab/bench_markers"     # visualization_msgs/MarkerArray of the twin's bench, for rviz
STATUS_OVERLAY = "/agentchemist/status_overlay"  # visualization_msgs/Marker: FSM / pH / volume text, for rviz
CAMERAS = ("front", "left_wrist", "right_wrist")
SIDES = ("left", "right")


def camera_topic(name: str) -> str:
    return f"/camera/{name}/color/image_raw"


def depth_topic(name: str) -> str:
    """Depth registered to the colour image (lab_sim arm_backend mujoco), 16UC1 mm as a RealSense publishes it."""
    return f"/camera/{name}/aligned_depth_to_color/image_raw"


def camera_info_topic(name: str) -> str:
    return f"/camera/{name}/color/camera_info"


def audio_topic(side: str) -> str:
    return f"/audio/{side}_gripper/raw"


def arm_trajectory_topic(side: str) -> str:
    return f"/{side}_arm_controller/joint_trajectory"


def gripper_command_topic(side: str) -> str:
    return f"/{side}_gripper_controller/commands"


# Action and service names.
RUN_EXPERIMENT = "/agentchemist/run_experiment"
EXECUTE_SUBTASK = "/agentchemist/execute_subtask"
DISPENSE = "/agentchemist/dispense"
DESCRIBE_SCENE = "/agentchemist/describe_scene"
CALIBRATE = "/agentchemist/calibrate"
QUERY_RECORDS = "/agentchemist/query_records"
PAUSE = "/agentchemist/pause"  # std_srvs/SetBool on the vision supervisor: a person pauses / resumes
