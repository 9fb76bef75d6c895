"""Tools for developing and demonstrating the library, apart from what the runbooks run on: the
runtime (``common`` up to ``runbooks``) imports none of them.

- :mod:`.class_archive`: the JVM class-data archive that spares the many Spark JVMs of ``make demo``
  and ``make test`` seconds of class loading each
- :mod:`.startup`: what a command-line process does first, to start sooner
- :mod:`.chromium_page`: a page opened in headless Chromium, for the course book's test
"""
