# Turns a text file into a C++ raw-string literal include: R"TSR(...)TSR"
file(READ ${IN} CONTENT)
file(WRITE ${OUT} "R\"TSR_EMBED(${CONTENT})TSR_EMBED\"\n")
