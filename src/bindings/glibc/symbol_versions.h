// Force-included into every nvfuse source on Linux x86_64 (CMakeLists.txt),
// so that the module loads on glibc 2.28, the manylinux_2_28 baseline
// torch's own wheels target, even when built on a newer glibc: each call
// of these functions binds to the version every glibc since 2.2.5 keeps,
// not to the newer default (dlopen, dlsym, dlerror and dlclose moved into
// libc at 2.34, and pthread_once, which std::call_once and std::future
// call; log got a new version at 2.29). On glibc before 2.34 the dl
// functions live in libdl and pthread_once in libpthread, which the Python
// interpreter itself loads there.
// An unused directive adds nothing to an object.
#pragma once

__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");
__asm__(".symver dlclose,dlclose@GLIBC_2.2.5");
__asm__(".symver log,log@GLIBC_2.2.5");
__asm__(".symver pthread_once,pthread_once@GLIBC_2.2.5");
