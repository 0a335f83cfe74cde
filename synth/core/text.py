"""Words for numbers in what synth prints."""


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """"1 phase", "2 phases", "1,024 phases": the count with its noun in the right number."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
