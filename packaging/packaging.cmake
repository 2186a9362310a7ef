# Debian packages (cpack -G DEB): `agentctx` (the CLI and the agent server with its systemd unit)
# and `agentctx-dev` (headers, static libraries, the CMake package and a pkg-config file).

# pkg-config: the static libraries in link order, then what they link.
set(AGENTCTX_PC_REQUIRES "libcurl spdlog re2 libpq")
if(TARGET OpenSSL::Crypto)
    string(APPEND AGENTCTX_PC_REQUIRES " libcrypto")
endif()
# The prefix is found from the file's own place, so the same file serves /usr/local and a package.
file(RELATIVE_PATH AGENTCTX_PC_UP "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" AGENTCTX_PC_UP "${AGENTCTX_PC_UP}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/agentctx.pc.in ${CMAKE_CURRENT_BINARY_DIR}/agentctx.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/agentctx.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

if(AGENTCTX_BUILD_EXAMPLES)
    install(FILES ${CMAKE_CURRENT_LIST_DIR}/agentctx-server.service DESTINATION lib/systemd/system COMPONENT bin)
endif()

set(CPACK_PACKAGE_NAME agentctx)
set(CPACK_PACKAGE_VENDOR "agentctx")
set(CPACK_PACKAGE_CONTACT "agentctx maintainers <agentctx@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "keeps long-running LLM agent conversations inside the model's context window")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL bin dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_BIN_PACKAGE_NAME agentctx)
set(CPACK_DEBIAN_BIN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_BIN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_BIN_DESCRIPTION "agentctx command line and agent server\n The agentctx CLI (inspect, plan, compact, verify Pi-format sessions) and the\n agent server with a systemd unit.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME agentctx-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libboost1.81-dev, libboost-json1.81-dev, libcurl4-openssl-dev, libspdlog-dev, libre2-dev, libpq-dev, libssl-dev, pkg-config")
set(CPACK_DEBIAN_DEV_DESCRIPTION "agentctx C++20 library: headers, static libraries, CMake and pkg-config files\n Use with find_package(agentctx CONFIG REQUIRED) or pkg-config --cflags --libs agentctx.")
include(CPack)
