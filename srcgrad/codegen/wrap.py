"""astor's ``split_lines`` (``astor.source_repr``: a statement's written pieces, each line
longer than 79 characters wrapped), its lines wrapped by astor's own ``wrap_line`` given
a count of a group's length that runs in C.

``wrap_line`` counts what is left of a group after each line it writes: a long tuple (the
saved values a 300-statement function's sweeps return and unpack, some 400 names) is
counted once per line, by a list comprehension of ``len`` calls, and that was most of
the time of printing those sweeps. The counts are the same numbers, so the text is
astor's.
"""

from astor.source_repr import wrap_line


def _count(group):
    return sum(map(len, group))


def split_lines(source, maxline=79):
    """``astor.source_repr.split_lines(source, maxline)``: the same pieces, in order."""
    result = []
    extend = result.extend
    append = result.append
    line = []
    multiline = False
    count = 0
    for item in source:
        index = item.find("\n")
        if index:
            line.append(item)
            multiline = index > 0
            count += len(item)
        else:
            if line:
                if count <= maxline or multiline:
                    extend(line)
                else:
                    wrap_line(line, maxline, result, _count)
                count = 0
                multiline = False
                line = []
            append(item)
    return result
