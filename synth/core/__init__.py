"""Foundations every layer uses: errors, validated input, file output, integer maths, parallel map."""
