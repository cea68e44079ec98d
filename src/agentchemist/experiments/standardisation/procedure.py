"""The standardisation's procedure is the acid-base titration's pH endpoint: the same machine, readings and
holds (drops to a pH past the equivalence, ``ph_stable`` after each settled drop, ``verified`` at the
target). Its course check stays off: it is built only for an acid-base plan (experiments/acid_base/
course_check.py), and here the titrant's concentration is the unknown the run measures, so the plan's
curve, drawn at the nominal value, is not a reference the readings must follow."""
from agentchemist.experiments.acid_base.procedure import PhEndpoint

__all__ = ["PROCEDURE"]

PROCEDURE = PhEndpoint
