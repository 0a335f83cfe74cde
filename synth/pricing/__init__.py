"""Pricing and the seeds' analytical models: THE cost model (alphabeta), the lower bound of any
schedule under it (bounds: every time bound synth prints), schedules priced on routed networks (schedule_cost, compare),
DeSensi24's deficiency model, the seeds' closed forms, and the dragonfly, stencil, diameter-two and fat-tree
models of [Prisacari20]. Above the routers and the collectives they price."""
