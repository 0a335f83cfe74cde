"""Recognizing a family in an imported network (issue 26): `fabric:FILE` and `graph:FILE` networks that are
copies of a family network, intact or with a few links and switches missing, are routed as that family.

- shape.py: what the candidates are chosen from (router counts, degrees, terminals, levels);
- match.py: the searches that map a network onto a family's (isomorphism, embedding, completion);
- recognition.py: the candidates of every family, tried in turn, and the mapped network.
"""
