"""Words for numbers in what synth prints."""


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """"1 phase", "2 phases", "1,024 phases": the count with its noun in the right number."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def figure(value: float, digits: int = 4) -> str:
    """One style for the numbers of a printed table: `digits` significant digits (as '%.4g'), but
    never an exponent and thousands grouped: 18,800 next to 7,939 and 4.41, not 1.88e+04 and 7939;
    NaN (nothing measured) is '-'."""
    import math

    if value != value:
        return "-"
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= digits - 1:
        return f"{value:,.0f}"
    text = f"{value:.{digits - 1 - magnitude}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
