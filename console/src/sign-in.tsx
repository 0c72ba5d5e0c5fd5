// Sign-in with an API key, or with a user's e-mail and password (POST /v1/auth/token).
import { useState } from 'preact/hooks';
import { session } from './session.js';
import { ProblemBox, useAction } from './ui.js';

export const SignIn = () => {
  const [key, setKey] = useState('');
  const [login, setLogin] = useState({ tenantId: '', email: '', password: '' });
  const withKey = useAction();
  const withLogin = useAction();
  const input = (
    name: keyof typeof login,
    label: string,
    type: 'text' | 'email' | 'password',
    autocomplete: string,
    required = true,
  ) => (
    <label>
      {label}
      <input
        // Preact's types tell input types apart (tsc needs this), which the linter's view of them does not.
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
        type={type as 'text'}
        name={name}
        required={required}
        autoComplete={autocomplete}
        value={login[name]}
        onInput={(e) => setLogin({ ...login, [name]: (e.target as HTMLInputElement).value })}
      />
    </label>
  );
  return (
    <main id="content" class="sign-in">
      <h1>Sign in to the observation console</h1>
      <p>The credential is kept in this tab only, until you sign out or close it.</p>
      <div class="columns">
        <form
          aria-label="With an API key"
          onSubmit={(event) => {
            event.preventDefault();
            void withKey.run(() => Promise.resolve().then(() => session.useKey(key)));
          }}
        >
          <h2>With an API key</h2>
          <label>
            API key
            <input
              type="password"
              name="apiKey"
              required
              autoComplete="off"
              value={key}
              onInput={(e) => setKey((e.target as HTMLInputElement).value)}
            />
          </label>
          <button type="submit">Sign in with the key</button>
          <ProblemBox error={withKey.error} />
        </form>
        <form
          aria-label="With e-mail and password"
          onSubmit={(event) => {
            event.preventDefault();
            void withLogin.run(() =>
              session.login(login.email.trim(), login.password, login.tenantId.trim()),
            );
          }}
        >
          <h2>With e-mail and password</h2>
          {input('email', 'E-mail', 'email', 'username')}
          {input('password', 'Password', 'password', 'current-password')}
          {input(
            'tenantId',
            'Tenant id (only if asked: the password opens accounts in several)',
            'text',
            'organization',
            false,
          )}
          <button type="submit" disabled={withLogin.busy}>
            Sign in
          </button>
          <ProblemBox error={withLogin.error} />
        </form>
      </div>
    </main>
  );
};
