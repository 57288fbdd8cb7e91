"""The teaching model, rebuilt (issue 41), bottom to top: ``request.py`` (the typed ``Request``) <- ``readers.py`` (tokens to slots) <-
``router.py`` (complete or decline) <- ``conversation.py`` (follow-ups merged slot by slot) <- ``answers.py`` (the reading, then the figure).
It imports no old ``offline_*`` module; the old model calls into it where it has been switched over."""
