# Writes OUT, a header defining PILLARS_BUILD_COMMIT: the commit the sources are at, as
# `git describe --always --dirty` prints it ("-dirty" when files differ from it), or "unknown"
# outside a git checkout. Runs at every build; the header changes (and base/build_info.cpp is
# recompiled) only when the commit does.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR commit STREQUAL "")
  set(commit "unknown")
endif()
file(WRITE "${OUT}.new" "#define PILLARS_BUILD_COMMIT \"${commit}\"\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.new" "${OUT}")
file(REMOVE "${OUT}.new")
