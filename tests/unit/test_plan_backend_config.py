"""The planner's backend choice (agentchemist.plan.backends.BackendConfig): what each setting builds."""
import pytest

from agentchemist.params import ParameterError, build_config
from agentchemist.plan.backends import BackendConfig, OpenAICompatibleBackend, TransformersBackend


def test_each_backend_setting_builds_its_backend():
    assert BackendConfig().create() == "rules"
    llm = BackendConfig(backend="openai", llm_url="http://host:8000/v1", llm_model="m", llm_timeout_s=5.0).create()
    assert isinstance(llm, OpenAICompatibleBackend) and (llm.base_url, llm.model, llm.timeout_s) == (
        "http://host:8000/v1", "m", 5.0)
    local = BackendConfig(backend="transformers", llm_model="/models/x").create()
    assert isinstance(local, TransformersBackend) and local.model_path == "/models/x"


def test_an_llm_backend_without_its_model_fails_when_used_not_when_configured():
    config = build_config(BackendConfig, {"backend": "openai"})
    with pytest.raises(ValueError, match="model"):
        config.create()


def test_unknown_backend_is_refused_by_name():
    with pytest.raises(ParameterError,
                       match="parameter 'backend': 'gpt' is not one of 'rules', 'openai', 'transformers'"):
        build_config(BackendConfig, {"backend": "gpt"})
