"""SROS2 permissions for the graph, generated from what its nodes really use (issue 38).

    python -m agentchemist_ros.tools.security_policy --out security/ [--seconds 3] [--domain 0]

run beside the running graph (robot or twin launch). It watches the ROS graph for a few seconds, takes
every node's publishers, subscriptions, services and actions (rclpy's graph queries), checks the rules
below and writes:
- ``policy.xml``: the SROS2 policy (one enclave ``/agentchemist/<node>`` per node, a profile with exactly its
  endpoints), the input of ``ros2 security create_permission`` / ``generate_artifacts``;
- ``permissions/<node>.xml``: the DDS-Security permissions document of each enclave (OMG DDS-Security 1.1
  section 9.4.1.3: one grant, allow rules on the ROS topics as DDS names, default DENY), what the security
  plugins enforce once signed by the permissions CA.

The rules (RULES): only the planner publishes plans, only the vision supervisor sends dispense and
subtask goals, only the graph's agents publish anomalies (contracts/admission.GRAPH_AGENTS), only the
action policy and the dispenser send the arms trajectories. A graph that
breaks one (an extra participant publishing plans, say) is refused with one line per breach, exit 1, and
nothing is written: permissions are made from a clean graph.

Not run here: the PyPI Fast DDS is built without its security plugins, so the enclaves' keys,
certificates and enforcement (``ROS_SECURITY_ENABLE``) can only be tried on a ROS install with them.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from xml.etree import ElementTree as ET

from agentchemist.contracts.admission import GRAPH_AGENTS
from agentchemist_ros.common import topics

@dataclass
class Endpoints:
    """What one node uses (ROS names)."""
    publish: set = field(default_factory=set)
    subscribe: set = field(default_factory=set)
    serve: set = field(default_factory=set)
    call: set = field(default_factory=set)
    execute: set = field(default_factory=set)  # action servers
    send: set = field(default_factory=set)     # action clients


#: (what, endpoint kind, name, the nodes that may) -- the policy refuses a graph where anyone else does
RULES = (
    ("plans", "publish", topics.PLAN, ("planner",)),
    ("dispense goals", "send", topics.DISPENSE, ("vision_supervisor",)),
    ("subtask goals", "send", topics.EXECUTE_SUBTASK, ("vision_supervisor",)),
    ("anomalies (halts)", "publish", topics.ANOMALIES, GRAPH_AGENTS),
    *((f"{side} arm trajectories", "publish", topics.arm_trajectory_topic(side),
       ("action_policy", "dispenser_controller")) for side in topics.SIDES),
)


def breaches(graph: dict[str, Endpoints]) -> list[str]:
    """One line per node that uses an endpoint a rule keeps for others."""
    out = []
    for what, kind, name, allowed in RULES:
        for node, ends in sorted(graph.items()):
            if name in getattr(ends, kind) and not any(fnmatchcase(node, a) for a in allowed):
                out.append(f"{node} {'publishes' if kind == 'publish' else 'sends'} {what} on {name}: only "
                           f"{', '.join(allowed)} may")
    return out


# ------------------------------------------------------------------------------ from the live graph
def observe(node, seconds: float, spin) -> dict[str, Endpoints]:
    """Every other node's endpoints, after `seconds` of discovery (`spin(timeout)` spins the observer)."""
    from rclpy.action import get_action_client_names_and_types_by_node, get_action_server_names_and_types_by_node

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        spin(0.1)
    graph: dict[str, Endpoints] = {}
    for name, ns in node.get_node_names_and_namespaces():
        if name == node.get_name() or name.startswith("_"):
            continue
        e = graph.setdefault(name, Endpoints())

        def names(query):
            return {n for n, _ in query(name, ns) if "/_action/" not in n}
        e.publish |= names(node.get_publisher_names_and_types_by_node)
        e.subscribe |= names(node.get_subscriber_names_and_types_by_node)
        e.serve |= names(node.get_service_names_and_types_by_node)
        e.call |= names(node.get_client_names_and_types_by_node)
        e.execute |= {n for n, _ in get_action_server_names_and_types_by_node(node, name, ns)}
        e.send |= {n for n, _ in get_action_client_names_and_types_by_node(node, name, ns)}
    return graph


# ------------------------------------------------------------------------------ documents
def policy_xml(graph: dict[str, Endpoints]) -> ET.Element:
    """The SROS2 policy (format 0.2.0): one enclave per node, its profile listing exactly its endpoints."""
    policy = ET.Element("policy", version="0.2.0")
    enclaves = ET.SubElement(policy, "enclaves")
    for node, e in sorted(graph.items()):
        enclave = ET.SubElement(enclaves, "enclave", path=f"/agentchemist/{node}")
        profile = ET.SubElement(ET.SubElement(enclave, "profiles"), "profile", ns="/", node=node)
        for tag, item, attr, names in (("topics", "topic", "publish", e.publish),
                                       ("topics", "topic", "subscribe", e.subscribe),
                                       ("services", "service", "reply", e.serve),
                                       ("services", "service", "request", e.call),
                                       ("actions", "action", "execute", e.execute),
                                       ("actions", "action", "call", e.send)):
            if names:
                group = ET.SubElement(profile, tag, {attr: "ALLOW"})
                for n in sorted(names):
                    ET.SubElement(group, item).text = n
    return policy


def dds_topics(e: Endpoints) -> tuple[set, set]:
    """(published, subscribed) DDS topic names of a node: ROS topics as rt/..., services as their request
    and reply topics, actions as their goal, result and cancel services and feedback and status topics."""
    pub = {"rt" + t for t in e.publish} | {"ros_discovery_info"}
    sub = {"rt" + t for t in e.subscribe} | {"ros_discovery_info"}
    for s in e.serve:
        sub.add(f"rq{s}Request")
        pub.add(f"rr{s}Reply")
    for s in e.call:
        pub.add(f"rq{s}Request")
        sub.add(f"rr{s}Reply")
    services = ("send_goal", "get_result", "cancel_goal")
    for a in e.execute:
        sub |= {f"rq{a}/_action/{s}Request" for s in services}
        pub |= {f"rr{a}/_action/{s}Reply" for s in services} | {f"rt{a}/_action/{t}" for t in ("feedback", "status")}
    for a in e.send:
        pub |= {f"rq{a}/_action/{s}Request" for s in services}
        sub |= {f"rr{a}/_action/{s}Reply" for s in services} | {f"rt{a}/_action/{t}" for t in ("feedback", "status")}
    return pub, sub


def permissions_xml(node: str, e: Endpoints, domain: int, now: dt.datetime, years: int = 10) -> ET.Element:
    """The DDS-Security permissions document of one enclave: its grant, allow rules, default DENY."""
    dds = ET.Element("dds")
    grant = ET.SubElement(ET.SubElement(dds, "permissions"), "grant", name=f"/agentchemist/{node}")
    ET.SubElement(grant, "subject_name").text = f"CN=/agentchemist/{node}"
    validity = ET.SubElement(grant, "validity")
    ET.SubElement(validity, "not_before").text = now.strftime("%Y-%m-%dT%H:%M:%S")
    ET.SubElement(validity, "not_after").text = now.replace(year=now.year + years).strftime("%Y-%m-%dT%H:%M:%S")
    rule = ET.SubElement(grant, "allow_rule")
    ET.SubElement(ET.SubElement(rule, "domains"), "id").text = str(domain)
    pub, sub = dds_topics(e)
    for kind, names in (("publish", pub), ("subscribe", sub)):
        group = ET.SubElement(ET.SubElement(rule, kind), "topics")
        for n in sorted(names):
            ET.SubElement(group, "topic").text = n
    ET.SubElement(grant, "default").text = "DENY"
    return dds


def write(graph: dict[str, Endpoints], out: Path, domain: int, now: dt.datetime) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "policy.xml"]
    _save(policy_xml(graph), written[0])
    for node, e in sorted(graph.items()):
        path = out / "permissions" / f"{node}.xml"
        path.parent.mkdir(exist_ok=True)
        _save(permissions_xml(node, e, domain, now), path)
        written.append(path)
    return written


def _save(root: ET.Element, path: Path) -> None:
    ET.indent(root)
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="security_policy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for policy.xml and permissions/")
    parser.add_argument("--seconds", type=float, default=3.0, help="discovery time (wall s)")
    parser.add_argument("--domain", type=int, default=0, help="the ROS domain id the permissions grant")
    args = parser.parse_args(argv)
    import rclpy
    from rclpy.node import Node

    rclpy.init()
    try:
        observer = Node("_security_policy")
        graph = observe(observer, args.seconds, lambda t: rclpy.spin_once(observer, timeout_sec=t))
        observer.destroy_node()
    finally:
        rclpy.shutdown()
    if not graph:
        print("error: no node seen on the graph (start it first, same ROS_DOMAIN_ID)", file=sys.stderr)
        return 2
    if found := breaches(graph):
        for line in found:
            print(f"error: {line}", file=sys.stderr)
        return 1
    for path in write(graph, Path(args.out), args.domain, dt.datetime.now(dt.timezone.utc)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
