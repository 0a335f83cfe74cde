"""synth's file formats, each one module owning its reader, writer and schema (docs/formats.md).

- `instance`: instance files (TOML: a network, its traffic and routing in one file);
- `routes_file`: routes files (synth-routes/2 JSON), `routes_hdf5` their compact form;
- `schedule_file`: schedule files (synth-schedule/1 and /2 JSON; schedule_paths their recorded paths), `schedule_hdf5` their compact form;
- `loads_csv`: per-channel loads; `checkpoint`: the parts a long run keeps;
- `switch_tables`, `qos_policy`: the fabric files OpenSM reads (fabric.net, guid2lid, LFT dump, QoS policy).

Formats sit above the data types they carry (networks, schedules, tables) and below the commands.
"""
