"""Files that describe a network, read for the families that take one (fabric:FILE, graph:FILE): below
synth.io, which writes what synth computes, because a family builds its network from them."""
