# The README's embedding example must be the file the tests run, byte for byte.
file(READ ${README} readme)
file(READ ${SOURCE} source)
string(FIND "${readme}" "${source}" at)
if(at EQUAL -1)
    message(FATAL_ERROR "README.md does not show ${SOURCE} as it is; copy the file into its cpp block")
endif()
