"""The fused attention kernel as a template tuning task: an encoder's attention group yields an
`attention` task, and a measured record of it schedules the compiled model's attention kernel,
which computes what the default schedule computes."""

import numpy as np

import compiler.tune.templates  # noqa: F401 - registers the llvm templates
from compiler.graph.build_onnx import compile_model
from compiler.graph.tasks import attention_task, group_schedule, model_groups, template_tasks
from compiler.tune import MeasureInput, create_task
from compiler.tune.database import Database
from compiler.tune.dispatch import cpu_history
from compiler.tune.measure import CPURunner, LocalBuilder, measure_option
from compiler.zoo import encoder


def test_an_encoders_attention_record_schedules_its_kernel(tmp_path):
    path = tmp_path / "e.onnx"
    path.write_bytes(encoder(layers=1, hidden=64, heads=2, ffn=128, tokens=8, vocab=50))
    cpu = model_groups(path, "llvm")
    found = [(t, n) for t, n in template_tasks(cpu.groups, cpu.shapes) if t.template == "attention"]
    # 2 heads of 8 tokens, 32 wide, the padding mask
    assert [(t.task_args(), n) for t, n in found] == [((2, 8, 8, 32, 32, 1), 1)]
    (att, _), db = found[0], str(tmp_path / "r.db")
    # a config unlike the default (blocks of 4 or 8 rows, 2 vectors each, in parallel), measured
    knobs = {
        "tile_q": [4, 2],
        "score_vectors": 1,
        "context_vectors": 4,
        "unroll": 2,
        "parallel": "heads",
    }
    task = create_task("attention", att.task_args(), "llvm")
    option = measure_option(LocalBuilder(timeout=120), CPURunner(pool=None))
    try:
        with Database(db) as records:
            records.add_batch(
                option.measure([MeasureInput(task, task.config_space.from_json(knobs))])
            )
    finally:
        option.close()
    (group,) = [g for g in cpu.groups if attention_task(g, cpu.shapes)]
    with cpu_history(db, "llvm") as records:
        chosen = group_schedule(records, group, cpu.shapes)
    assert chosen.origin == "records" and chosen.knobs == {
        "rows": 2,
        "score_vectors": 1,
        "context_vectors": 4,
        "unroll": 2,
        "parallel": "heads",
    }
    plain = compile_model(path, target="llvm")
    tuned = compile_model(path, target="llvm", db=db)
    assert tuned.manifest["tuned_from"]["records"] == 1  # the attention kernel
    assert att.label() in plain.manifest["untuned"]
    assert att.label() not in tuned.manifest["untuned"]
    ids = np.random.default_rng(0).integers(1, 50, (1, 8))
    ids[:, -2:] = 0  # padding: the attention's mask
    want, got = plain.run({"ids": ids}), tuned.run({"ids": ids})
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)
