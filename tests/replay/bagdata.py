"""Small synthetic bags for the bag-tool tests (written with our BagWriter; no ROS needed)."""
from __future__ import annotations

import random
import string
from pathlib import Path

from rosbags.typesys import Stores, get_typestore

from agentchemist.bag import BagWriter, QosProfile, WriterOptions
from tests.conftest import REPO

REFERENCE = REPO.parent / "shared" / "fixtures" / "rosbag2_reference"
REFERENCE_START = 1586406456763032325
REFERENCE_DURATION = 151137181
_STORE = get_typestore(Stores.ROS2_JAZZY)
LATCHED = QosProfile(depth=1, reliability="reliable", durability="transient_local")
VOLATILE = QosProfile(depth=10, reliability="reliable", durability="volatile")


def string_cdr(text: str) -> bytes:
    cls = _STORE.types["std_msgs/msg/String"]
    return bytes(_STORE.serialize_cdr(cls(data=text), "std_msgs/msg/String"))


def decode_string(data: bytes) -> str:
    return _STORE.deserialize_cdr(data, "std_msgs/msg/String").data


def write_strings(path: Path, n: int = 50, *, storage: str = "mcap", size: int = 100, step_ns: int = 10_000_000,
                  start_ns: int = 1_000_000_000, topics=("/chatter",), latched=(), noise: bool = False,
                  **options) -> Path:
    """n String messages round-robin over `topics`, `step_ns` apart; text 'i:<index>:' padded to `size`
    with 'x' (compresses to nothing) or, with `noise`, seeded random letters (does not compress)."""
    rng = random.Random(7)
    with BagWriter(path, WriterOptions(storage=storage, **options)) as writer:
        for topic in topics:
            writer.add_topic(topic, "std_msgs/msg/String", [LATCHED if topic in latched else VOLATILE])
        for i in range(n):
            head = f"i:{i}:"
            pad = "".join(rng.choices(string.ascii_letters, k=size - len(head))) if noise else ""
            writer.write(topics[i % len(topics)], start_ns + i * step_ns, string_cdr((head + pad).ljust(size, "x")))
    return path


def index_of(data: bytes) -> int:
    return int(decode_string(data).split(":")[1])



# ---------------------------------------------------------------------------------------------------------
# Services and actions in a bag. rosbag2 records topics; the replay fixtures also keep what the live nodes'
# action servers and the scene service were asked and answered (make_fixtures.py taps them), as messages of
# the types rosidl generates for them: `<Action>_SendGoal_Request` (goal_id + goal), `<Action>_GetResult_Response`
# (status + result), `<Srv>_Response`. Those have no .msg file to embed (only the .srv / .action text is
# installed, and the rosbags library generates definitions for msg/ types only): `interface_msgdef` writes
# the ros2msg text, nested types included, as rosbag2 embeds it; readers decode them with it like any type.

SEPARATOR = "=" * 80
PRIMITIVES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
              "int64", "uint64", "string", "wstring"}


def _qualified(text: str, package: str) -> str:
    """A .srv/.action section with relative field types ("SceneObject[]") named in full ("pkg/SceneObject[]")."""
    lines = []
    for line in text.splitlines():
        words = line.split()
        if words and not line.lstrip().startswith("#") and "=" not in words[0]:
            base = words[0].split("[")[0].split("<")[0]
            if "/" not in base and base not in PRIMITIVES:
                line = line.replace(words[0], f"{package}/{words[0]}", 1)
        lines.append(line)
    return "\n".join(lines)


def _sections(text: str) -> list[str]:
    parts, current = [], []
    for line in text.splitlines():
        if line.strip() == "---":
            parts.append("\n".join(current))
            current = []
        else:
            current.append(line)
    parts.append("\n".join(current))
    return parts


def interface_definitions(interface: str, text: str) -> dict[str, str]:
    """ros2msg text (field types in full) of the message types rosidl generates for the service or action
    `interface` (`package/srv/Name` or `package/action/Name`, its .srv / .action `text`)."""
    package, kind, _name = interface.split("/")
    sections = [_qualified(section, package) for section in _sections(text)]
    if kind == "srv" and len(sections) == 2:
        return {f"{interface}_Request": sections[0], f"{interface}_Response": sections[1]}
    if kind != "action" or len(sections) != 3:
        raise ValueError(f"{interface}: {len(sections)} sections is neither a service nor an action")
    goal, result, feedback = sections
    uuid = "unique_identifier_msgs/UUID goal_id"
    return {f"{interface}_Goal": goal, f"{interface}_Result": result, f"{interface}_Feedback": feedback,
            f"{interface}_FeedbackMessage": f"{uuid}\n{interface}_Feedback feedback",
            f"{interface}_SendGoal_Request": f"{uuid}\n{interface}_Goal goal",
            f"{interface}_SendGoal_Response": "bool accepted\nbuiltin_interfaces/Time stamp",
            f"{interface}_GetResult_Request": uuid,
            f"{interface}_GetResult_Response": f"int8 status\n{interface}_Result result"}


def interface_msgdef(types, msgtype: str) -> tuple[str, str]:
    """(ros2msg definition with nested types, type hash) of `msgtype`, one of the types of an installed service
    or action (`pkg/action/Name_SendGoal_Request`, `pkg/srv/Name_Response` ...); `types` (an
    agentchemist.bag.MessageTypes) gives the share folders and the nested msg/ types. The hash is rosidl's,
    from the interface's installed .json."""
    import json

    package, kind, name = msgtype.split("/")
    parts = name.split("_")
    interface = next((f"{package}/{kind}/{'_'.join(parts[:i])}" for i in range(1, len(parts))
                      if _interface_file(types, f"{package}/{kind}/{'_'.join(parts[:i])}") is not None), None)
    if interface is None:
        raise FileNotFoundError(f"no installed service or action defines {msgtype}")
    path = _interface_file(types, interface)
    defined = interface_definitions(interface, path.read_text())
    sections: dict[str, str] = {}

    def add(typename: str) -> None:
        text = defined[typename]
        for line in text.splitlines():
            words = line.split()
            if not words or line.lstrip().startswith("#") or "=" in words[0]:
                continue
            base = words[0].split("[")[0].split("<")[0]
            if base in PRIMITIVES or base in sections:
                continue
            if base in defined:
                sections[base] = defined[base]
                add(base)
            else:  # a msg/ type: its own definition, nested types included, as the writer embeds it
                full = base if base.count("/") == 2 else base.replace("/", "/msg/", 1)
                nested = types.definition(full)[0].split("\n" + SEPARATOR + "\nMSG: ")
                sections.setdefault(base, nested[0])
                for part in nested[1:]:
                    head, _, body = part.partition("\n")
                    sections.setdefault(head, body)

    add(msgtype)
    msgdef = "\n".join([defined[msgtype]] + [f"{SEPARATOR}\nMSG: {n}\n{t}" for n, t in sections.items()])
    hashes = {}
    if path.with_suffix(".json").is_file():
        hashes = {e["type_name"]: e["hash_string"]
                  for e in json.loads(path.with_suffix(".json").read_text()).get("type_hashes", [])}
    return msgdef, hashes.get(msgtype, "")


def _interface_file(types, interface: str):
    package, kind, name = interface.split("/")
    for share in types.share_dirs:
        path = share / package / kind / f"{name}.{kind}"
        if path.is_file():
            return path
    return None
