"""The simulation file (synth simulate --out) is JSON that synth's readers accept: never NaN or Infinity."""

from __future__ import annotations

import io

import pytest

import synth.io.simulation_file as simulation_file


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_time_that_is_not_a_number_is_never_written(monkeypatch, value):
    monkeypatch.setattr(simulation_file, "simulation_document", lambda simulation: {"total": {"model_us": value}})
    handle = io.StringIO()
    with pytest.raises(ValueError):
        simulation_file.write_simulation(handle, None)


def test_a_finite_document_is_written_as_json(monkeypatch):
    monkeypatch.setattr(simulation_file, "simulation_document", lambda simulation: {"total": {"model_us": 1.5}})
    handle = io.StringIO()
    simulation_file.write_simulation(handle, None)
    assert handle.getvalue() == '{\n "total": {\n  "model_us": 1.5\n }\n}\n'
