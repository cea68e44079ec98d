"""The transformers planner backend end to end on a tiny randomly initialised model built here from a
config (no weights from a hub): it proves the plumbing (tokenizer, chat template, generation, the
bounded repair loop) and that garbage output is refused with the validation messages, never a half-plan."""
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from agentchemist.plan import plan_instruction  # noqa: E402
from agentchemist.plan.backends import TransformersBackend  # noqa: E402

INSTRUCTION = ("Titrate 25 mL of 0.1 M hydrochloric acid with 0.1 M sodium hydroxide until the pH reaches 7, "
               "using the pipette, the beaker on the magnetic stirrer and the pH meter.")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_lm")
    # A word-level tokenizer trained on a few sentences, with a chat template, like a real chat model's.
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    trainer = tokenizers.trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[BOS]", "[EOS]"])
    tok.train_from_iterator([INSTRUCTION, '{ "state_machine": { "states": [ "initial" ] } }',
                             "system user assistant plan JSON"], trainer)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                                bos_token="[BOS]", eos_token="[EOS]")
    fast.chat_template = ("{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} [EOS] {% endfor %}"
                          "{% if add_generation_prompt %}assistant : {% endif %}")
    fast.save_pretrained(path)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                      max_position_embeddings=4096, pad_token_id=fast.pad_token_id,
                                      bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id)
    transformers.LlamaForCausalLM(config).save_pretrained(path)
    return path


def test_garbage_from_a_random_model_is_refused_with_reasons(tiny_model):
    backend = TransformersBackend(str(tiny_model), max_new_tokens=24)
    outcome = plan_instruction(INSTRUCTION, backend=backend, max_repairs=1)
    assert outcome.kind == "refusal" and outcome.plan is None
    assert outcome.reasons, "the refusal must carry the validation messages"
    assert backend._model is not None, "the model was really loaded and asked"


def test_missing_model_is_a_clear_error(tmp_path):
    outcome = plan_instruction(INSTRUCTION, backend=TransformersBackend(str(tmp_path / "absent")))
    assert outcome.kind == "refusal" and "cannot load model" in outcome.message
