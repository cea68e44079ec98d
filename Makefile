# AgentChemist ROS. `make demo` and `make test` bootstrap first (idempotent; seconds when up to date).
SHELL := /bin/bash
ENV := . scripts/env.sh &&
PYTEST_ARGS ?=

.PHONY: setup demo test test-all test-slow test-random test-alone shell bench lock urdf worlds clean help

help:
	@echo "make demo      run the HCl/NaOH worked example in the lab twin (report under runs/)"
	@echo "make test      bootstrap, then the default test suite (unit, graph, replay, e2e; slow ones excluded)"
	@echo "make test-all  every test, slow ones included"
	@echo "make test-random  the default suite in a random order (pytest-random-order; seed printed)"
	@echo "make test-alone   tests/graph alone in a random order, then every test file in its own process"
	@echo "make shell     a shell with the ROS 2 + agentchemist environment"
	@echo "make bench     benchmarks -> bench/results/*.json and the table in docs/benchmarks.md"
	@echo "make setup     only the bootstrap"
	@echo "make urdf      re-expand urdf/agentchemist_aloha.urdf from the xacro (after editing the xacro)"
	@echo "make worlds    rewrite worlds/lab.sdf (Gazebo) from the bench description and hcl_naoh's layout"

setup:
	@bash scripts/bootstrap.sh

demo: setup
	@$(ENV) python -m agentchemist_ros.tools.demo $(DEMO_ARGS)

test: setup
	@$(ENV) python -m pytest -p no:cacheprovider $(PYTEST_ARGS)

test-all: setup
	@$(ENV) python -m pytest -p no:cacheprovider -m "" $(PYTEST_ARGS)

test-slow: setup
	@$(ENV) python -m pytest -p no:cacheprovider -m slow $(PYTEST_ARGS)

# Tests must not lean on each other: the same suite shuffled (rerun a failure with
# PYTEST_ARGS=--random-order-seed=N), and each file alone. Long: for CI or before a merge, not every edit.
test-random: setup
	@$(ENV) python -m pytest -p no:cacheprovider --random-order-bucket=global $(PYTEST_ARGS)

test-alone: setup
	@$(ENV) python -m pytest -p no:cacheprovider --random-order-bucket=global tests/graph $(PYTEST_ARGS)
	@$(ENV) for f in tests/*/test_*.py; do echo "== $$f"; python -m pytest -p no:cacheprovider -q "$$f" $(PYTEST_ARGS) || exit 1; done

shell: setup
	@$(ENV) exec bash --rcfile <(echo 'PS1="(agentchemist) \w$$ "')

bench: setup
	@$(ENV) python bench/run_all.py

# The checked-in plain URDF (for tools without xacro) is exactly this command's output; a test checks it.
urdf: setup
	@$(ENV) cd urdf && xacro agentchemist_aloha.urdf.xacro -o agentchemist_aloha.urdf

# The Gazebo lab world is written from the same scene source as the MuJoCo scene; a test checks it is fresh.
worlds: setup
	@$(ENV) python -m agentchemist.sim.sdf_world --scenario hcl_naoh --out worlds/lab.sdf

lock:
	@.venv/bin/pip freeze --all --exclude-editable | grep -v '^agentchemist\|^pip==' | sed '1i # Pinned versions of every Python dependency (pip freeze of a working .venv). Regenerate with make lock.' > requirements/constraints.txt

clean:
	rm -rf ros2_ws/build ros2_ws/install ros2_ws/log .venv/.agentchemist-stamps
