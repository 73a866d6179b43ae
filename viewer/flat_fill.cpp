#include "viewer/flat_fill.h"

// GL_GLEXT_PROTOTYPES comes from viewer/CMakeLists.txt (in a unity build another file may
// include <GL/gl.h> first): Mesa's libGL exports the core 3.3 entry points.
#include <GL/gl.h>

#include <algorithm>
#include <string>

namespace shardscope::viewer {
namespace {

// The backend's vertex transform, the vertex colour unchanged: `flat` spares the rasteriser
// interpolating what is one colour per rectangle anyway.
constexpr const char* kFlatVertexShader = R"(#version 330 core
uniform mat4 ProjMtx;
in vec2 Position;
in vec4 Color;
flat out vec4 FlatColor;
void main() {
  FlatColor = Color;
  gl_Position = ProjMtx * vec4(Position.xy, 0, 1);
}
)";
constexpr const char* kFlatFragmentShader = R"(#version 330 core
flat in vec4 FlatColor;
layout (location = 0) out vec4 OutColor;
void main() { OutColor = FlatColor; }
)";

// One GL context per process (the viewer's window), so one program.
struct FlatFillGl {
  GLuint program = 0;
  // The backend program whose attribute locations ours was linked with, and its ProjMtx.
  GLint linked_for = 0;
  GLint backend_proj = -1, proj = -1;
  bool failed = false;  // a relink failed: the callback leaves the backend's program on
};
FlatFillGl g_flat_gl;
bool g_flat_enabled = true;

std::string ShaderLog(GLuint shader) {
  GLint n = 0;
  glGetShaderiv(shader, GL_INFO_LOG_LENGTH, &n);
  std::string log(static_cast<size_t>(std::max(n, 1)), '\0');
  glGetShaderInfoLog(shader, n, nullptr, log.data());
  return log.c_str();
}

std::string ProgramLog(GLuint program) {
  GLint n = 0;
  glGetProgramiv(program, GL_INFO_LOG_LENGTH, &n);
  std::string log(static_cast<size_t>(std::max(n, 1)), '\0');
  glGetProgramInfoLog(program, n, nullptr, log.data());
  return log.c_str();
}

Result<GLuint> Compile(GLenum kind, const char* source) {
  const GLuint shader = glCreateShader(kind);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  GLint ok = GL_FALSE;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (ok != GL_TRUE) {
    const std::string log = ShaderLog(shader);
    glDeleteShader(shader);
    return RuntimeError(std::string("view: the flat-fill ") +
                        (kind == GL_VERTEX_SHADER ? "vertex" : "fragment") +
                        " shader does not compile under this OpenGL: " + log);
  }
  return shader;
}

bool Linked(GLuint program) {
  GLint ok = GL_FALSE;
  glGetProgramiv(program, GL_LINK_STATUS, &ok);
  return ok == GL_TRUE;
}

// ImGui's 130-style shader (what "#version 330 core" selects) leaves its attribute locations
// to the linker and the backend's vertex array follows them: ours are bound to the same.
bool LinkFor(FlatFillGl& g, GLint backend) {
  const GLint pos = glGetAttribLocation(static_cast<GLuint>(backend), "Position");
  const GLint col = glGetAttribLocation(static_cast<GLuint>(backend), "Color");
  g.backend_proj = glGetUniformLocation(static_cast<GLuint>(backend), "ProjMtx");
  if (pos < 0 || col < 0 || g.backend_proj < 0) return false;
  glBindAttribLocation(g.program, static_cast<GLuint>(pos), "Position");
  glBindAttribLocation(g.program, static_cast<GLuint>(col), "Color");
  glLinkProgram(g.program);
  if (!Linked(g.program)) return false;
  g.proj = glGetUniformLocation(g.program, "ProjMtx");
  g.linked_for = backend;
  return g.proj >= 0;
}

}  // namespace

Status InitFlatFill() {
  ShutdownFlatFill();
  SS_ASSIGN_OR_RETURN(GLuint vs, Compile(GL_VERTEX_SHADER, kFlatVertexShader));
  Result<GLuint> fs = Compile(GL_FRAGMENT_SHADER, kFlatFragmentShader);
  if (!fs.ok()) {
    glDeleteShader(vs);
    return fs.status();
  }
  const GLuint program = glCreateProgram();
  glAttachShader(program, vs);
  glAttachShader(program, *fs);
  // Linked once here so that an error shows at start; the first callback links it again with
  // the backend's attribute locations (the shaders stay attached for that).
  glLinkProgram(program);
  glDeleteShader(vs);
  glDeleteShader(*fs);
  if (!Linked(program)) {
    const std::string log = ProgramLog(program);
    glDeleteProgram(program);
    return RuntimeError("view: the flat-fill program does not link under this OpenGL: " + log);
  }
  g_flat_gl = FlatFillGl{};
  g_flat_gl.program = program;
  return Status::Ok();
}

void ShutdownFlatFill() {
  if (g_flat_gl.program != 0) glDeleteProgram(g_flat_gl.program);
  g_flat_gl = FlatFillGl{};
}

void SetFlatFillEnabled(bool enabled) { g_flat_enabled = enabled; }
bool FlatFillEnabled() { return g_flat_enabled; }

void FlatFillCallback(const ImDrawList*, const ImDrawCmd*) {
  FlatFillGl& g = g_flat_gl;
  if (!g_flat_enabled || g.program == 0 || g.failed) return;
  // The backend set up its state just before (its SetupRenderState, or the reset after the
  // previous flat section): its program is the current one.
  GLint backend = 0;
  glGetIntegerv(GL_CURRENT_PROGRAM, &backend);
  if (backend == 0 || static_cast<GLuint>(backend) == g.program) return;
  if (backend != g.linked_for && !LinkFor(g, backend)) {
    g.failed = true;
    return;
  }
  // The backend's own projection, so that the flat pass puts every vertex where ImGui's would.
  GLfloat projection[16];
  glGetUniformfv(static_cast<GLuint>(backend), g.backend_proj, projection);
  glUseProgram(g.program);
  glUniformMatrix4fv(g.proj, 1, GL_FALSE, projection);
  glDisable(GL_BLEND);
}

}  // namespace shardscope::viewer
